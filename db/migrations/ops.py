"""What several migrations do alike, written once: the foreign key of a table whose rows belong
to a trace, the covering index on the effective verdict, a rollup table's identity columns, a
new rollup table, and marking rollups to be counted when the store is next opened.

Migrations mean the same thing forever: this module is frozen as the migrations that import it
use it. A migration needing something else writes it itself (or adds a new function here).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


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
