"""The files a command line names: a folder stands for the trace files below it.

``toollens import logs/`` and ``toollens lint runs/`` take folders as well as files, the way a
batch of trace logs usually lies on disk. A folder is walked to any depth, in name order; the
files that count as traces are those with a suffix of :data:`TRACE_SUFFIXES` (the format is
still sniffed from the content, as for a file named on the line). Hidden files and folders
(``.git``, ``.DS_Store``) are passed over; every other file not taken is named in
:attr:`Inputs.skipped`, so the caller can say what it did not read. A file named on the line
is taken whatever its name. Pure: it reads the folder listing, never a file's content.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: The suffixes of trace files in a folder (a compressed file is recognized by its content,
#: so ``.gz`` stands for ``.json.gz`` and ``.jsonl.gz`` alike).
TRACE_SUFFIXES: tuple[str, ...] = (".json", ".jsonl", ".ndjson", ".gz")
#: :data:`TRACE_SUFFIXES` as messages name them.
TRACE_SUFFIXES_TEXT = ", ".join(TRACE_SUFFIXES)
STDIN = "-"


class MissingInput(ValueError):
    """A path on the command line is neither a file nor a folder."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """The files to read, in order, and the files of named folders that were not taken."""

    files: list[Path]
    skipped: list[Path]


def expand(paths: Iterable[Path], *, stdin: bool = False) -> Inputs:
    """``paths`` with each folder replaced by its trace files (``-`` kept when ``stdin``).

    Raises :class:`MissingInput` for a path that does not exist (or is a folder with no
    trace file in it: a typo'd folder would otherwise import nothing without a word)."""
    files: list[Path] = []
    skipped: list[Path] = []
    for path in paths:
        if (stdin and str(path) == STDIN) or path.is_file():
            files.append(path)
        elif path.is_dir():
            found = _below(path, skipped)
            if not found:
                raise MissingInput(f"{path}: no trace file in this folder ({TRACE_SUFFIXES_TEXT})")
            files.extend(found)
        else:
            raise MissingInput(f"{path}: no such file or folder")
    return Inputs(files, skipped)


def _below(folder: Path, skipped: list[Path]) -> list[Path]:
    """The trace files below ``folder``, in path order; the other files in ``skipped``."""
    found: list[Path] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        if path.name.lower().endswith(TRACE_SUFFIXES):
            found.append(path)
        else:
            skipped.append(path)
    return found
