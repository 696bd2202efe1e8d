"""The widths of the stored text columns: the one place they are declared.

The schema (:mod:`db.schema`) gives every bounded text column the width named here, and the
import fits its values to the same widths (:mod:`db.contract.bounds`) without importing the
database library: a parser or the analysis that needs a width reads it from here.
"""

from __future__ import annotations

from typing import Final

#: ``{table: {column: characters}}`` of every ``VARCHAR`` column of the schema's own tables.
COLUMN_WIDTHS: Final[dict[str, dict[str, int]]] = {
    "imports": {
        "origin": 20,
        "encoding": 40,
        "state": 20,
        "host": 255,
        "process_start": 80,
    },
    "source_files": {
        "head_hash": 64,
        "tail_hash": 64,
        "full_hash": 64,
        "format": 40,
    },
    "traces": {
        "dedupe_key": 200,
        "content_hash": 64,
        "external_id": 400,
        "display_id": 400,
        "title": 200,
        "format": 40,
        "agent": 200,
        "model": 200,
        "token_counts": 20,
        "reviewed_by": 200,
        "session_id": 400,
    },
    "messages": {
        "role": 20,
        "source_id": 400,
        "branch": 400,
        "branch_parent": 400,
    },
    "tool_calls": {
        "tool_call_id": 400,
        "tool_name": 400,
        "signature": 500,
        "pair_state": 30,
        "pairing_method": 20,
        "schema_issue": 60,
        "kind": 10,
    },
    "tool_results": {
        "tool_call_id": 400,
        "provided_name": 400,
        "explicit_source": 40,
        "tool": 400,
        "status": 20,
        "status_source": 20,
        "error_type": 60,
        "rule": 60,
        "fingerprint": 300,
        "suggestion_kind": 30,
        "pair_state": 30,
        "pairing_method": 20,
        "verdict": 20,
        "duration_source": 20,
        "error_type_corrected": 60,
        "verdict_corrected": 20,
        "corrected_by": 200,
    },
    "findings": {
        "name": 60,
        "tool": 400,
    },
    "error_streaks": {
        "tool": 400,
        "fingerprint": 300,
        "error_type": 60,
    },
    "rejected_records": {
        "reason": 60,
        "record_key": 64,
    },
    "annotations": {
        "label": 60,
        "author": 200,
        "updated_by": 200,
    },
    "trace_versions": {
        "content_hash": 64,
    },
    "trace_updates": {
        "old_hash": 64,
        "new_hash": 64,
    },
    "import_files": {
        "format": 40,
    },
    "rollup_results": {
        "status": 20,
        "status_source": 20,
        "rule": 100,
        "error_type": 60,
        "verdict": 40,
        "pair_state": 40,
        "timing": 10,
        "suggestion_kind": 30,
    },
    "rollup_calls": {
        "pair_state": 40,
    },
    "rollup_traces": {
        "token_counts": 20,
    },
    "rollup_findings": {
        "kind": 40,
    },
    "rollup_fingerprints": {
        "fingerprint": 300,
        "error_type": 60,
    },
    "rollup_activity": {
        "error_type": 60,
    },
    "rollup_activity_days": {
        "error_type": 60,
    },
}

#: The trace dimensions every rollup table carries (:class:`db.schema._RollupColumns`).
DIMENSION_WIDTHS: Final[dict[str, int]] = {"agent": 200, "model": 200, "tool": 400}


def column_width(table: str, column: str) -> int:
    """The width of ``table.column``, a bounded text column.

    >>> column_width("traces", "dedupe_key")
    200
    """
    try:
        return COLUMN_WIDTHS[table][column]
    except KeyError:
        raise ValueError(f"{table}.{column} is not a bounded text column") from None
