"""Who ran a call (``tool_calls.kind``: client, server, mcp) is stored, listed on the Tool calls
page and in ``toollens pairs``, and filters the pairs, on SQLite and PostgreSQL.

The input is the Anthropic golden case with server and MCP tool blocks (web search, a failed web
fetch, a failed MCP call) and a tau2 results file (client calls only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from db.engine import make_engine
from db.queries.pairs import PairQuery, count_pairs, list_pairs, pair_choices
from ingest.importing.pipeline import import_paths

GOLDEN = Path(__file__).parent / "golden"
SERVER_AND_MCP = GOLDEN / "anthropic" / "server_and_mcp_tools" / "input.json"
TAU2 = GOLDEN / "tau2" / "results" / "input.json"


@pytest.fixture
def engine(db_url: str):  # type: ignore[no-untyped-def]
    engine = make_engine(db_url)
    import_paths(engine, [SERVER_AND_MCP, TAU2])
    yield engine
    engine.dispose()


def test_every_call_is_listed_with_its_kind_and_its_explicit_error(engine) -> None:  # type: ignore[no-untyped-def]
    page = list_pairs(engine, limit=100, query=PairQuery(sort="trace"))
    rows = sorted(
        (r.tool, r.kind, r.status, r.status_source) for r in page.itertuples() if r.kind != "client"
    )
    assert rows == [
        ("echo", "mcp", "error", "explicit"),
        ("web_fetch", "server", "error", "explicit"),
        ("web_search", "server", "success", "inferred"),
    ]
    assert sorted(page["kind"].value_counts().items()) == [("client", 4), ("mcp", 1), ("server", 2)]


def test_the_kind_filter_keeps_only_calls_of_that_kind(engine) -> None:  # type: ignore[no-untyped-def]
    assert count_pairs(engine, query=PairQuery(kind="server")) == 2
    assert count_pairs(engine, query=PairQuery(kind="mcp")) == 1
    assert count_pairs(engine, query=PairQuery(kind="client")) == 4
    assert count_pairs(engine) == 7
    mcp = list_pairs(engine, query=PairQuery(kind="mcp"), limit=10)
    assert list(mcp["call_id"]) == ["mcptoolu_014Q35RayjACSWkSj4X2yov1"]
    assert list(mcp["pair_state"]) == ["paired"]
    assert pair_choices(engine)["kind"] == ["client", "server", "mcp"]
