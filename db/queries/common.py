"""SQL building blocks every query shares: effective values, the keys that join a Tool Message
to its pair, the traces alias for display columns, exact percentiles from a count histogram, and
running a statement into a DataFrame.

Human corrections win over derived values everywhere: the effective error type is
``COALESCE(error_type_corrected, error_type)``, likewise the verdict. All of it works the same on
SQLite and PostgreSQL; the expressions that only steer SQLite's planner live in
``db.queries.planner``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from db.bulk.streaming import read_keyed_columns
from db.schema import FindingRow, MessageRow, ToolResultRow, TraceRow, aliased

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy import Select

#: The traces table as joined for display columns. An alias, because the shared filters reach
#: ``traces`` through an EXISTS that must not correlate with a join of the same table.
TRACE = aliased(TraceRow, name="trace")


def labelled(*columns: Any) -> list[Any]:
    """Each of ``columns`` labelled by its own name (``tool_results.tool AS tool``)."""
    return [column.label(column.key) for column in columns]


#: Effective values: a reviewer's correction overrides what the rules derived.
effective_error_type = sa.func.coalesce(
    ToolResultRow.error_type_corrected, ToolResultRow.error_type
)
effective_verdict = sa.func.coalesce(ToolResultRow.verdict_corrected, ToolResultRow.verdict)
#: Results that are not the answer of any call: orphans, second answers (their call is paired
#: with the first answer), and early results no later call took.
#: The states are literals, not parameters: a query with parameters there is not seen to imply
#: the predicate of the partial index over these rows (``UNPAIRED_RESULT_SQL``) by PostgreSQL's
#: generic plans.
unpaired_result = sa.or_(
    ToolResultRow.pair_state.in_(
        [sa.literal_column("'orphan_result'"), sa.literal_column("'duplicate_result'")]
    ),
    ToolResultRow.call_seq.is_(None),
)
#: Results a reviewer corrected (the predicate of the partial index that finds them).
corrected_result = sa.or_(
    ToolResultRow.error_type_corrected.is_not(None), ToolResultRow.verdict_corrected.is_not(None)
)

#: The outcome of the next call of the same tool after a result (``next_call_succeeded``), as
#: the results rollup keeps it for errors (``next_call``): :data:`RECOVERED`, :data:`NOT_RECOVERED`,
#: :data:`NO_NEXT_CALL`.
RECOVERED, NOT_RECOVERED, NO_NEXT_CALL = 1, 0, -1
next_call_outcome = sa.case(
    (ToolResultRow.next_call_succeeded.is_(True), RECOVERED),
    (ToolResultRow.next_call_succeeded.is_(False), NOT_RECOVERED),
    else_=NO_NEXT_CALL,
)

#: Finding rows that count: a name mismatch is stored on its call and on the Tool Message that
#: answers it under another name, and counts once, on the call.
COUNTED_FINDING = sa.not_(
    sa.and_(FindingRow.name == "name_mismatch", FindingRow.call_index.is_(None))
)

#: Bins of a Tool Message's share of the input of the model call that read it, in per mille:
#: (from, to); the last bin is open (a count from another tokenizer can exceed the input).
INPUT_SHARE_BINS: tuple[tuple[int, int | None], ...] = (
    (0, 10),
    (10, 20),
    (20, 50),
    (50, 100),
    (100, 200),
    (200, 500),
    (500, 1000),
    (1000, None),
)


def input_share_bin() -> sa.ColumnElement[int]:
    """The :data:`INPUT_SHARE_BINS` index of a Tool Message's ``tokens / read_input_tokens``
    (for results whose ``read_input_tokens`` > 0; the page's histogram and its rollup)."""
    permille = (
        sa.cast(ToolResultRow.tokens, sa.BigInteger) * 1000 // ToolResultRow.read_input_tokens
    )
    return sa.case(
        *[
            (permille < upper, index)
            for index, (_, upper) in enumerate(INPUT_SHARE_BINS)
            if upper is not None
        ],
        else_=len(INPUT_SHARE_BINS) - 1,
    )


#: Label for error results whose type no rule could name.
UNCLASSIFIED = "(unclassified)"


def error_type_label() -> sa.ColumnElement[str]:
    """The effective error type, :data:`UNCLASSIFIED` where there is none."""
    return sa.func.coalesce(effective_error_type, sa.literal(UNCLASSIFIED))


def result_message() -> sa.ColumnElement[bool]:
    """The join condition of a tool result with its message (the Tool Message's content)."""
    return sa.and_(
        MessageRow.trace_id == ToolResultRow.trace_id,
        MessageRow.seq == ToolResultRow.message_seq,
    )


def call_pair_key(seq: Any, index: Any) -> sa.ColumnElement[str]:
    """The ``pair`` URL parameter of a call, as SQL: ``"<seq>:<index>"`` (its message's seq
    and its index in the message)."""
    return sa.cast(seq, sa.String) + sa.literal(":") + sa.cast(index, sa.String)


def result_pair_key(results: Any = ToolResultRow) -> sa.ColumnElement[str]:
    """The ``pair`` URL parameter of a Tool Message, as SQL (``results``: ``tool_results`` or
    an alias of it).

    ``"<call seq>:<call index>"`` when the result answers a call, else ``"r<result seq>"``.
    """
    return sa.case(
        (results.call_seq.is_not(None), call_pair_key(results.call_seq, results.call_index)),
        else_=sa.literal("r") + sa.cast(results.message_seq, sa.String),
    )


def to_frame(conn: sa.Connection, stmt: Select[*tuple[Any, ...]]) -> pd.DataFrame:
    """Run ``stmt`` and return its rows as a DataFrame with the statement's column names."""
    # pandas is imported here, not at the top: ``toollens summary`` needs this module's SQL
    # and no frame, and importing pandas would be a third of its run (tests/test_import_cost.py).
    import pandas as pd

    # Column by column, off the driver's cursor: given rows, pandas probes each row object for
    # named-tuple fields, which costs a SQLAlchemy row an exception each (5-10x slower on 50,000
    # rows). By position: two columns may share a name.
    keys, columns = read_keyed_columns(conn, stmt)
    if not columns[0]:
        return pd.DataFrame([], columns=keys)
    frame = pd.DataFrame({i: list(column) for i, column in enumerate(columns)})
    frame.columns = pd.Index(keys)
    return frame


def nearest_rank_at(cumulative: Any, total: Any, num: int, den: int) -> sa.ColumnElement[bool]:
    """True where a running count reaches the nearest rank ``ceil(q * total)`` of ``q = num /
    den``: the smallest value where it holds is the nearest-rank percentile."""
    return cumulative * den >= total * num


def total(column: Any, condition: Any = None) -> Any:
    """``SUM(column)`` (where ``condition`` holds) as a BIGINT: a count read from rollup rows
    (PostgreSQL's SUM of a BIGINT is NUMERIC)."""
    summed = sa.func.sum(column if condition is None else sa.case((condition, column), else_=0))
    return sa.cast(summed, sa.BigInteger)
