"""The rollups on ClickHouse (the 2-shard cluster and chdb): the store of ``test_rollups`` read
through the rollups and through the base tables, and the maintained rollups against a recount
after an update and deletions. A module of its own, so that the suite's workers run it beside
the SQLite and PostgreSQL cases.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import CLICKHOUSE_CLUSTER, clickhouse_addresses, require_clickhouse
from test_rollups import (
    BREAKDOWN,
    CLICKHOUSE_GRID,
    QUERIES,
    _check_catalogue,
    _check_grid,
    _golden_inputs,
    _reads,
    _with_statements,
    _write_generated,
    changes_keep_rollups_exact,
)

from db.engine import make_engine
from db.queries import suggestions
from db.queries.filters import Filters
from db.rollups import upkeep as rollups
from db.rollups.read import DURATIONS, scope
from ingest.importing.pipeline import import_paths


@pytest.fixture(scope="module", params=["cluster", "chdb"])
def clickhouse_store(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    """The traces of ``test_rollups``' store in a ClickHouse store: a fresh database on the
    2-shard cluster, or in the in-process engine."""
    database = f"t_{uuid.uuid4().hex[:12]}"
    if request.param == "chdb":
        chdb = request.getfixturevalue("chdb_session")
        url = f"chdb://?database={database}"
    else:
        require_clickhouse()
        servers = ",".join(f"{h}:{p}" for h, p in clickhouse_addresses())
        url = f"clickhouse://{servers}/{database}?cluster={CLICKHOUSE_CLUSTER}"
    engine = make_engine(url)
    try:
        _write_generated(engine, 4_000)
        import_paths(engine, _golden_inputs(), workers=1)
        yield engine
    finally:
        engine.dispose()
        if request.param == "chdb":
            chdb.query(f"DROP DATABASE IF EXISTS {database}")
        else:
            from clickhouse_driver import Client

            for host, port in clickhouse_addresses():
                client = Client(host=host, port=port)
                client.execute(f"DROP DATABASE IF EXISTS {database}")
                client.disconnect()


#: The ClickHouse grid reads every figure twice (rollups, base tables) under five filters: 455
#: reads, over 15 minutes on the 2-core machine the suite runs on (the base tables' views
#: rebuild each trace's latest version per read). It runs when this variable is 1; the
#: rollups' rows are compared with a recount on every run
#: (``test_maintained_rollups_equal_a_rebuild_after_every_kind_of_change_on_clickhouse``).
CLICKHOUSE_GRID_ENV = "TOOLLENS_CLICKHOUSE_GRID"


@pytest.mark.skipif(
    os.environ.get(CLICKHOUSE_GRID_ENV) != "1",
    reason=f"the ClickHouse figure grid takes over 15 minutes: set {CLICKHOUSE_GRID_ENV}=1",
)
def test_every_figure_equals_the_base_tables_on_clickhouse(clickhouse_store: sa.Engine) -> None:
    with clickhouse_store.connect() as conn:
        assert rollups.complete(conn)
        assert scope(conn, DURATIONS, Filters(model="x")) is not None
    assert _check_grid(clickhouse_store) == len(CLICKHOUSE_GRID) * len(QUERIES)
    assert _check_catalogue(clickhouse_store) == len(CLICKHOUSE_GRID) * 39
    advised = suggestions.follow_rates(clickhouse_store)
    assert list(advised["suggestions"]) == [10, 10, 9, 6, 5, 5, 5, 4, 4, 4, 3, 3, 3, 2, 1, 1, 1]
    breakdown, sent = _with_statements(
        clickhouse_store, lambda: suggestions.verdict_breakdown(clickhouse_store)
    )
    assert _reads(sent, "rollup_results") and not _reads(sent, "tool_results"), sent
    assert breakdown.values.tolist() == BREAKDOWN


def test_maintained_rollups_equal_a_rebuild_after_every_kind_of_change_on_clickhouse(
    clickhouse_store: sa.Engine, tmp_path: Path
) -> None:
    """An update and deletions (a ClickHouse store takes no corrections)."""
    changes_keep_rollups_exact(clickhouse_store, tmp_path)
