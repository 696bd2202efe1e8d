"""What several migrations do alike, written once: a new table with its ``id`` primary key, the
column types and runs of columns of one type, the foreign keys to ``imports`` and of a table
whose rows belong to a trace, a table's plain indexes, an index replaced, a column added in
batch mode, the CHECK on a closed set of values, the covering index on the effective verdict, a
rollup table's identity columns, a new rollup table, and marking rollups to be counted when the
store is next opened.

Migrations mean the same thing forever: this module is frozen as the migrations that import it
use it. A migration needing something else writes it itself (or adds a new function here).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql


def json_type() -> sa.types.TypeEngine[Any]:
    """JSON, stored as JSONB on PostgreSQL (revision 0001's JSON columns)."""
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def big_id() -> sa.types.TypeEngine[int]:
    """A 64-bit id, SQLite's INTEGER there (the rowid)."""
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def columns(
    kind: sa.types.TypeEngine[Any], *names: str, nullable: bool = False, **options: Any
) -> list[sa.Column[Any]]:
    """A column of type ``kind`` named each of ``names``, in that order (``options`` as
    :class:`sqlalchemy.Column` takes them, ``server_default`` say)."""
    return [sa.Column(name, kind, nullable=nullable, **options) for name in names]


def create_table(
    name: str, *items: Any, id_kind: sa.types.TypeEngine[Any] | None = None, **options: Any
) -> sa.Table:
    """Create table ``name``: its ``id`` (an INTEGER unless ``id_kind``), then ``items``
    (columns and constraints), with the primary key ``pk_<name>`` on ``id``."""
    return op.create_table(
        name,
        sa.Column("id", sa.Integer() if id_kind is None else id_kind, nullable=False),
        *items,
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{name}")),
        **options,
    )


def of_import(table: str, column: str = "import_id") -> sa.ForeignKeyConstraint:
    """The foreign key of ``table``'s ``column`` to ``imports.id``."""
    return sa.ForeignKeyConstraint(
        [column], ["imports.id"], name=op.f(f"fk_{table}_{column}_imports")
    )


#: A plain index: its name, its columns, whether unique.
Index = tuple[str, Sequence[str], bool]


def create_indexes(table: str, indexes: Iterable[Index]) -> None:
    """Create ``indexes`` on ``table``, in that order, in one batch (no copy of the table)."""
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name, on, unique in indexes:
            batch_op.create_index(name, list(on), unique=unique)


def drop_indexes(table: str, indexes: Iterable[Index]) -> None:
    """Drop ``indexes`` of ``table``, in the reverse order, in one batch."""
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name, _, _ in reversed(list(indexes)):
            batch_op.drop_index(name)


def replace_index(table: str, old: str, new: str, on: Sequence[Any], **options: Any) -> None:
    """Drop the index ``old`` of ``table`` and create ``new`` (``old`` again or another name)
    on ``on`` in its place (``options`` as ``op.create_index`` takes them)."""
    op.drop_index(old, table_name=table)
    op.create_index(new, table, list(on), **options)


def add_in_batch(table: str, column: sa.Column[Any]) -> None:
    """Add ``column`` to ``table`` in batch mode: SQLite rebuilds the table where it cannot
    alter it in place."""
    with op.batch_alter_table(table) as batch:
        batch.add_column(column)


def drop_in_batch(table: str, column: str) -> None:
    """Drop ``column`` of ``table`` in batch mode (:func:`add_in_batch` undone)."""
    with op.batch_alter_table(table) as batch:
        batch.drop_column(column)


#: The finding kinds ``ck_findings_name`` allows as revision 0007 made it (0014 adds one).
FINDING_KINDS_0007 = (
    "bare_status", "raw_exception", "error_without_suggestion", "empty_marked_error",
    "name_mismatch", "oversized", "unparsed_arguments", "unknown_tool",
    "arguments_schema_violation", "missing_result", "orphan_result", "duplicate_result",
    "result_before_call", "late_result",
)  # fmt: skip


def one_of(column: str, values: Iterable[str]) -> str:
    """The CHECK expression that ``column`` is one of ``values``: ``column IN ('a', 'b')``."""
    listed = ", ".join(f"'{value}'" for value in values)
    return f"{column} IN ({listed})"


def owned_by_trace(table: str) -> sa.ForeignKeyConstraint:
    """The foreign key of ``table``'s ``trace_id`` to ``traces.id``: the rows are deleted with
    their trace."""
    return sa.ForeignKeyConstraint(
        ["trace_id"],
        ["traces.id"],
        name=op.f(f"fk_{table}_trace_id_traces"),
        ondelete="CASCADE",
    )


def create_verdict_index() -> None:
    """Create ``ix_tool_results_effective_verdict`` as revision 0005 made it: on the effective
    verdict, partial (results with a verdict) and covering the Suggestions page's counts."""
    verdict = "coalesce(verdict_corrected, verdict)"
    op.create_index(
        "ix_tool_results_effective_verdict",
        "tool_results",
        [sa.text(verdict), "tool", "trace_id", "verdict", "verdict_corrected", "error_type",
         "error_type_corrected", "suggestion_kind"],
        sqlite_where=sa.text(f"{verdict} IS NOT NULL"),
        postgresql_where=sa.text(f"{verdict} IS NOT NULL"),
    )  # fmt: skip


def rollup_identity() -> list[sa.Column]:
    """The columns every rollup table starts with (revision 0017's layout): its 16-byte key,
    the grain, the trace dimensions, and the count ``n``."""
    return [
        sa.Column("key", sa.LargeBinary(length=16), primary_key=True, nullable=False),
        sa.Column("grain", sa.Integer(), nullable=False),
        sa.Column("day", sa.Integer(), nullable=True),
        sa.Column("import_id", sa.Integer(), nullable=True),
        sa.Column("agent", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("tool", sa.String(length=400), nullable=True),
        sa.Column("n", sa.BigInteger(), nullable=False),
    ]


def create_rollup(name: str, *measures: sa.Column) -> None:
    """Create the rollup table ``name``: :func:`rollup_identity`, then ``measures``, clustered
    by its key (SQLite ``WITHOUT ROWID``)."""
    op.create_table(
        name,
        *rollup_identity(),
        *measures,
        sa.PrimaryKeyConstraint("key", name=op.f(f"pk_{name}")),
        sqlite_with_rowid=False,
    )


def mark_pending(*tables: str) -> None:
    """List ``tables`` in ``rollup_state.pending`` (each once) when the store holds traces:
    their rows are missing or stale, so the figures read the base tables until
    ``db.migrate.count_rollups`` counts them when the store is next opened."""
    bind = op.get_bind()
    if not bind.execute(sa.text("SELECT EXISTS (SELECT 1 FROM traces)")).scalar():
        return
    for table in tables:
        bind.execute(
            sa.text(
                "UPDATE rollup_state SET pending = "
                "CASE WHEN pending IS NULL THEN :name ELSE pending || ' ' || :name END "
                "WHERE pending IS NULL OR ' ' || pending || ' ' NOT LIKE :listed"
            ),
            {"name": table, "listed": f"% {table} %"},
        )
