"""Importing uploaded trace files: the size limit and the import through the CLI's pipeline.

No Streamlit here: the upload panel (:mod:`dashboard.files_ui`) reads the files and the write
gateway (:mod:`dashboard.writes`) calls :func:`import_uploaded` once the role allows it.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy import Engine

from ingest.importing.pipeline import ImportSummary, import_paths

UPLOAD_MAX_MB_ENV = "TOOLLENS_UPLOAD_MAX_MB"
DEFAULT_UPLOAD_MAX_MB = 200


class UploadTooLargeError(ValueError):
    """An uploaded file is over the size limit."""


def upload_limit_mb(value: str | None = None) -> int:
    """The per-file upload limit in MB: ``value`` or ``$TOOLLENS_UPLOAD_MAX_MB``, default 200."""
    raw = os.environ.get(UPLOAD_MAX_MB_ENV, "") if value is None else value
    try:
        limit = int(raw)
    except ValueError:
        return DEFAULT_UPLOAD_MAX_MB
    return limit if limit > 0 else DEFAULT_UPLOAD_MAX_MB


def too_large(files: Sequence[tuple[str, int]], max_mb: int) -> list[str]:
    """One message per ``(name, size in bytes)`` over ``max_mb``."""
    limit = max_mb * 1024 * 1024
    return [
        f"{name} is {size / 1024 / 1024:.1f} MB; the upload limit is {max_mb} MB "
        f"(import bigger files with `toollens import`)"
        for name, size in files
        if size > limit
    ]


def _safe_name(name: str) -> str:
    # Only the base name, in safe characters: a browser-supplied name never picks the folder.
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name.replace("\\", "/")).name).lstrip(".")
    return base or "upload"


def import_uploaded(
    engine: Engine,
    files: Sequence[tuple[str, bytes]],
    max_mb: int,
    *,
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import uploaded ``(original name, content)`` files through the CLI's pipeline; the
    stored file names are the original ones. Raises :class:`UploadTooLargeError` first if a
    file is over ``max_mb``."""
    if not files:
        raise ValueError("no file to import")
    problems = too_large([(name, len(data)) for name, data in files], max_mb)
    if problems:
        raise UploadTooLargeError("; ".join(problems))
    with tempfile.TemporaryDirectory(prefix="toollens-upload-") as tmp:
        paths = []
        for i, (name, data) in enumerate(files):
            # One folder per file keeps the original names even when two are the same.
            path = Path(tmp) / str(i) / _safe_name(name)
            path.parent.mkdir()
            path.write_bytes(data)
            paths.append(path)
        # In-process (no worker processes): forking a threaded Streamlit server is unsafe.
        # Not incremental: an upload is a temporary copy, gone once imported.
        return import_paths(
            engine, paths, origin="upload", display_names=[n for n, _ in files],
            progress=progress, workers=0, incremental=False,
        )  # fmt: skip
