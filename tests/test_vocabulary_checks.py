"""The database itself refuses values outside the vocabulary (CHECK constraints from
``db.contract.vocabulary``), on SQLite and on PostgreSQL; ``error_type`` stays open."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from db.contract import vocabulary
from db.schema import FindingRow, ImportRun, MessageRow, ToolCallRow, ToolResultRow, TraceRow

NOW = datetime(2026, 12, 1, tzinfo=UTC)
RESULT = {"message_seq": 2, "tool": "t", "status": "error", "status_source": "inferred",
          "pair_state": "paired"}  # fmt: skip
CALL = {"message_seq": 1, "call_index": 0, "tool_name": "t", "signature": "t:0",
        "pair_state": "paired"}  # fmt: skip


def _trace(engine: sa.Engine) -> int:
    with engine.begin() as conn:
        import_id = conn.execute(
            sa.insert(ImportRun).values(started_at=NOW, encoding="o200k_base")
        ).inserted_primary_key[0]
        return int(
            conn.execute(
                sa.insert(TraceRow).values(
                    import_id=import_id,
                    dedupe_key="k",
                    display_id="d",
                    format="openai_chat",
                    source_file="f.jsonl",
                    imported_at=NOW,
                )
            ).inserted_primary_key[0]
        )


def _insert(engine: sa.Engine, table: Any, values: dict[str, Any]) -> None:
    with engine.begin() as conn:
        conn.execute(sa.insert(table).values(**values))


def test_a_status_outside_the_vocabulary_is_refused_by_the_database(engine: sa.Engine) -> None:
    trace_id = _trace(engine)
    with pytest.raises(sa.exc.IntegrityError, match="ck_tool_results_status"):
        _insert(engine, ToolResultRow, {**RESULT, "trace_id": trace_id, "status": "failed"})
    _insert(engine, ToolResultRow, {**RESULT, "trace_id": trace_id})
    with engine.connect() as conn:
        assert conn.execute(sa.select(ToolResultRow.status)).scalars().all() == ["error"]


@pytest.mark.parametrize(
    ("table", "base", "column", "word"),
    [
        (ToolResultRow, RESULT, "status_source", "guessed"),
        (ToolResultRow, RESULT, "pair_state", "unpaired"),
        (ToolResultRow, RESULT, "pairing_method", "name"),
        (ToolResultRow, RESULT, "verdict", "maybe"),
        (ToolResultRow, RESULT, "verdict_corrected", "Followed"),
        (ToolCallRow, CALL, "pair_state", "lost"),
        (ToolCallRow, CALL, "pairing_method", "guess"),
        (ToolCallRow, CALL, "kind", "remote"),
        (MessageRow, {"seq": 0}, "role", "bot"),
        (FindingRow, {"message_seq": 0}, "name", "too_long"),
    ],
)
def test_every_closed_set_column_refuses_a_word_outside_its_set(
    sqlite_url: str, table: Any, base: dict[str, Any], column: str, word: str
) -> None:
    from db.engine import make_engine

    engine = make_engine(sqlite_url)
    trace_id = _trace(engine)
    table_name = table.__tablename__
    with pytest.raises(sa.exc.IntegrityError, match=f"ck_{table_name}_{column}"):
        _insert(engine, table, {**base, "trace_id": trace_id, column: word})
    engine.dispose()


def test_every_word_of_the_vocabulary_and_any_error_type_is_accepted(engine: sa.Engine) -> None:
    trace_id = _trace(engine)
    rows: list[tuple[Any, dict[str, Any]]] = [
        *((ToolResultRow, {**RESULT, "status": v}) for v in vocabulary.STATUSES),
        *((ToolResultRow, {**RESULT, "status_source": v}) for v in vocabulary.STATUS_SOURCES),
        *((ToolResultRow, {**RESULT, "pair_state": v}) for v in vocabulary.PAIR_STATES),
        *((ToolResultRow, {**RESULT, "pairing_method": v}) for v in vocabulary.PAIRING_METHODS),
        *(
            (ToolResultRow, {**RESULT, "verdict": v, "verdict_corrected": v})
            for v in vocabulary.VERDICTS
        ),
        # A protocol-provided error type is kept verbatim: no CHECK on error_type.
        *(
            (ToolResultRow, {**RESULT, "error_type": v})
            for v in (*vocabulary.ERROR_TYPES, "payment_declined")
        ),
        *((ToolCallRow, {**CALL, "pair_state": v}) for v in vocabulary.PAIR_STATES),
        *(
            (ToolCallRow, {**CALL, "pairing_method": v})
            for v in (*vocabulary.PAIRING_METHODS, None)
        ),
        *((ToolCallRow, {**CALL, "kind": v}) for v in vocabulary.CALL_KINDS),
        *((MessageRow, {"seq": n, "role": v}) for n, v in enumerate(vocabulary.ROLES)),
        *((FindingRow, {"message_seq": 0, "name": v}) for v in vocabulary.FINDING_KINDS),
    ]
    for table, values in rows:
        _insert(engine, table, {**values, "trace_id": trace_id})
    with engine.connect() as conn:
        counted = {
            t.__tablename__: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (ToolResultRow, ToolCallRow, MessageRow, FindingRow)
        }
    assert counted == {"tool_results": 4 + 3 + 6 + 2 + 4 + 14, "tool_calls": 6 + 3 + 3,
                       "messages": 4, "findings": 15}  # fmt: skip


def test_every_finding_kind_has_a_level_and_a_description() -> None:
    from db.contract import vocabulary as v

    assert tuple(v.FINDING_LEVEL) == v.FINDING_KINDS
    assert tuple(v.FINDING_DESCRIPTION) == v.FINDING_KINDS
    assert set(v.FINDING_LEVEL.values()) <= set(v.FINDING_LEVELS)
    assert v.FINDING_LEVEL["undeclared_parameter"] == "warning"
    assert v.FINDING_LEVEL["arguments_schema_violation"] == "error"


def test_the_vocabulary_holds_the_sets_of_the_design_in_display_order() -> None:
    from db.contract import vocabulary as v

    assert v.STATUSES == ("success", "error", "partial", "unknown")
    assert v.STATUS_SOURCES == ("explicit", "protocol", "inferred")
    assert v.PAIR_STATES == ("paired", "missing_result", "orphan_result", "duplicate_result",
                             "result_before_call", "late_result")  # fmt: skip
    assert v.PAIRING_METHODS == ("id", "position")
    assert v.CALL_KINDS == ("client", "server", "mcp")
    assert v.VERDICTS == ("followed", "ignored", "unclear", "no_next_action")
    assert v.ERROR_TYPES[:2] == ("rate_limit", "timeout") and len(v.ERROR_TYPES) == 13
    assert v.ERROR_TYPES[-1] == "other"
    # Every pairing problem is a finding of its own.
    assert set(v.PAIR_STATES) - {"paired"} <= set(v.FINDING_KINDS)
    assert set(v.PROTOCOL_STATUSES) < set(v.STATUSES)
    assert (v.DEFAULT_LOOP_K, v.DEFAULT_TOKEN_BUDGET, v.DEFAULT_ENCODING) == (3, 2000, "o200k_base")
    assert v.ENCODINGS == ("o200k_base", "cl100k_base")
