"""``db.schema``'s table classes: the Core table each class declares, its columns as class
attributes, aliases with the same attributes, and the declarations it refuses. (No
``from __future__ import annotations``: the classes declared here must be read.)"""

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.sql.expression import ColumnClause

from db.schema import Base, RollupSizeRow, RollupTraceRow, TraceRow, aliased, column


def test_the_class_attributes_are_the_tables_columns() -> None:
    table = TraceRow.__table__
    assert TraceRow.id is table.c.id
    # The attribute's name differs from the column's: the column keeps its name as its key.
    assert TraceRow.meta is table.c.metadata
    assert TraceRow.__columns__["meta"] is table.c.metadata
    assert str(sa.select(TraceRow.meta).where(TraceRow.id == 1)) == (
        "SELECT traces.metadata \nFROM traces \nWHERE traces.id = :id_1"
    )
    assert str(sa.delete(TraceRow)) == "DELETE FROM traces"


def test_nullability_and_types_come_from_the_annotations() -> None:
    c = TraceRow.__table__.c
    assert (c.id.nullable, c.dedupe_key.nullable, c.external_id.nullable) == (False, False, True)
    assert isinstance(c.import_id.type, sa.Integer)  # a foreign key declared without a type
    assert c.tags.type.__class__.__name__ == "JSON"


def test_each_table_has_its_own_copy_of_a_mixins_columns() -> None:
    assert RollupSizeRow.key is RollupSizeRow.__table__.c.key
    assert RollupSizeRow.key is not RollupTraceRow.key
    assert RollupTraceRow.key.table is RollupTraceRow.__table__
    # Own columns first, then the mixin's (as SQLAlchemy's declarative mapping ordered them).
    assert [c.name for c in RollupSizeRow.__table__.c][:3] == ["tokens", "key", "grain"]


def test_an_alias_has_the_columns_under_the_same_attributes() -> None:
    trace = aliased(TraceRow, name="t2")
    assert str(sa.select(trace.meta, trace.id).where(trace.id == TraceRow.id)) == (
        "SELECT t2.metadata, t2.id \nFROM traces AS t2, traces \nWHERE t2.id = traces.id"
    )
    anonymous = aliased(TraceRow)
    assert anonymous.__table__.name != "traces"
    assert anonymous.id is not trace.id


def test_a_column_without_a_type_or_its_annotation_is_refused() -> None:
    with pytest.raises(TypeError, match="name: text without a type: declare its width in db"):

        class _Untyped(Base):
            __tablename__ = "untyped_test_table"
            id: ColumnClause[int] = column(sa.Integer, primary_key=True)
            name: ColumnClause[str] = column()

    with pytest.raises(TypeError, match="a column is annotated ColumnClause"):

        class _Misannotated(Base):
            __tablename__ = "misannotated_test_table"
            id: Any = column(sa.Integer, primary_key=True)

    with pytest.raises(TypeError, match="annotated as text"):

        class _AsText(Base):
            __tablename__ = "as_text_test_table"
            id: "ColumnClause[int]" = column(sa.Integer, primary_key=True)

    # None reached the shared metadata: the table is built after every column is.
    assert "untyped_test_table" not in Base.metadata.tables
    assert "misannotated_test_table" not in Base.metadata.tables
    assert "as_text_test_table" not in Base.metadata.tables


def test_every_bounded_text_column_has_the_width_the_contract_declares() -> None:
    from db.contract.widths import COLUMN_WIDTHS, DIMENSION_WIDTHS

    declared = {
        (table.name, col.name): col.type.length
        for table in Base.metadata.sorted_tables
        for col in table.columns
        if type(col.type) is sa.String
    }
    expected = {
        (t, c): width for t, columns in COLUMN_WIDTHS.items() for c, width in columns.items()
    }
    rollups = {
        (t, c): width
        for t in Base.metadata.tables
        if t.startswith("rollup_") and t != "rollup_state"
        for c, width in DIMENSION_WIDTHS.items()
    }
    assert declared == expected | rollups
    assert declared[("traces", "dedupe_key")] == 200
