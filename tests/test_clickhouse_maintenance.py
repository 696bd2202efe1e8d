"""``compare``, ``reanalyze`` and ``vacuum`` on ClickHouse (issue 41): the same files imported
into SQLite and into a ClickHouse store (the 2-shard cluster, 18.16, and chdb) give the same
comparisons, byte for byte; a re-analysis under another price table writes the changed traces
as new versions (no mutation) and leaves summary and pairs as SQLite's after the same
re-analysis; vacuum takes the deleted traces' and the replaced versions' rows off the disk,
exactly those, and every answer stays the same."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_clickhouse_parity import _read, _run
from typer.testing import CliRunner

from db.clickhouse.dialect import client_of, layout_of
from db.clickhouse.vacuum import ORDER
from db.engine import make_engine
from ingest.analysis.prices import PRICES_ENV
from ingest.cli import app
from ingest.scenarios.populations import BASELINE, CANDIDATE, generate_population

runner = CliRunner()

#: Traces per generated population (imports 1 and 2).
POPULATION = 100
#: Import 3: real files (an OpenAI chat export of airline traces and ToolBench legacy files;
#: none names its model, so none is priced; one trace with a schema finding).
REAL = ("openai-chat", "openai-legacy")
#: A price table in which only gpt-4o has a price, twice the shipped one: the costs of the
#: populations' 200 traces (gpt-4o-2024-08-06) double, the real files' traces stay unpriced.
PRICES = "[models.gpt-4o]\ninput = 5.0\ncached_input = 2.5\noutput = 20.0\n"
#: The deleted trace: the one with a schema finding (import 3).
DELETED_TRACE = "e374fad509ba"
COMPARISONS = (
    ("--baseline", "import=1", "--candidate", "import=2"),
    ("--baseline", "import=1", "--candidate", "import=2", "--json", "--fail-on", "error_rate"),
    ("--baseline", "import=2", "--candidate", "import=3", "--json"),
    ("--baseline", "tool=get_weather", "--candidate", "tool=search_flights&import=2", "--json"),
)


@pytest.fixture(scope="module")
def inputs(realdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("inputs")
    prices = out / "prices.toml"
    prices.write_text(PRICES)
    return {
        "imports": [
            [str(generate_population(out / "baseline", BASELINE, seed=1, traces=POPULATION))],
            [str(generate_population(out / "candidate", CANDIDATE, seed=1, traces=POPULATION))],
            [str(p) for folder in REAL for p in sorted((realdata / folder).iterdir())],
        ],
        "prices": str(prices),
    }


def _compare(db: str, args: tuple[str, ...]) -> tuple[int, bytes]:
    result = runner.invoke(app, ["compare", "--db", db, *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout_bytes


def _imported(db: str, inputs: dict[str, Any]) -> dict[str, Any]:
    for files in inputs["imports"]:
        _run("import", "--db", db, *files)
    return {"compare": [_compare(db, args) for args in COMPARISONS]}


def _reanalyze(db: str, inputs: dict[str, Any]) -> bytes:
    """``toollens reanalyze --prices``, whose price table stays in force in this process only
    until it returns (the CLI sets ``TOOLLENS_PRICES``; later imports use the shipped table)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(PRICES_ENV, inputs["prices"])  # unset again on leaving the context
        return _run("reanalyze", "--db", db, "--prices", inputs["prices"])


def _reanalysed(db: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "reanalyze": _reanalyze(db, inputs),
        "answers": _read(db),
        "compare": _compare(db, COMPARISONS[2]),
    }


def _deleted(db: str) -> dict[str, Any]:
    _run("delete", "--db", db, "--import", "1", "--yes")
    _run("delete", "--db", db, "--trace", DELETED_TRACE, "--yes")
    return {"answers": _read(db), "compare": _compared_after(db)}


def _compared_after(db: str) -> list[tuple[int, bytes]]:
    """Import 1 (the baseline population) deleted: against nothing, and import 2 against 3."""
    return [_compare(db, COMPARISONS[0]), _compare(db, COMPARISONS[2])]


@pytest.fixture(scope="module")
def on_sqlite(inputs: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = str(tmp_path_factory.mktemp("sqlite") / "store.db")
    out = {
        "imported": _imported(db, inputs),
        "reanalysed": _reanalysed(db, inputs),
        "deleted": _deleted(db),
    }
    engine = make_engine(db)
    with engine.connect() as conn:
        out["rows"] = {
            name: conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar_one()
            for name in ORDER
            if name != "trace_deletions"
        }
    engine.dispose()
    return out


def _local_rows(db: str) -> dict[str, int]:
    """Rows of each local table of the store, every server's (a version or revision no read
    sees included)."""
    engine = make_engine(db)
    client, layout = client_of(engine), layout_of(engine)
    return {
        name: int(client.query(f"SELECT count() FROM {layout.every_row(name)}")[1][0][0])
        for name in ORDER
    }


def _versions(db: str) -> dict[int, int]:
    engine = make_engine(db)
    client, layout = client_of(engine), layout_of(engine)
    found = client.query(
        f"SELECT version, count() FROM {layout.every_row('traces')} GROUP BY version"
    )[1]
    return {int(v): int(n) for v, n in found}


def test_sqlite_reference_figures(on_sqlite: dict[str, Any]) -> None:
    """What the ClickHouse stores are held to: not empty, not trivial."""
    imported = on_sqlite["imported"]["compare"]
    assert imported[0][1].startswith(
        b"baseline:  import=1 (100 traces)\ncandidate: import=2 (100 traces)\n"
    )
    assert imported[1][0] == 1  # the flight search's error rate: worse with evidence
    assert b'"new_schema_issues": [\n    {\n      "tool": "dota_2_steam_web"' in imported[2][1]
    assert on_sqlite["reanalysed"]["reanalyze"] == b"reanalyzed 415 traces\n"
    assert on_sqlite["rows"] == {
        "messages": 6323, "tool_calls": 1510, "tool_results": 1498, "findings": 239,
        "error_streaks": 14, "traces": 314, "imports": 2, "import_files": 17,
        "rejected_records": 0,
    }  # fmt: skip


def test_compare_reanalyze_and_vacuum_answer_as_sqlite(
    clickhouse_db: str, inputs: dict[str, Any], on_sqlite: dict[str, Any]
) -> None:
    db = clickhouse_db
    assert _imported(db, inputs) == on_sqlite["imported"]
    imported = _local_rows(db)

    assert _reanalysed(db, inputs) == on_sqlite["reanalysed"]
    # The changed traces were written again, as version 2; nothing was updated in place.
    assert _versions(db)[2] == 200
    again = _reanalyze(db, inputs)
    assert again == b"reanalyzed 415 traces\n"
    assert 3 not in _versions(db)  # nothing changed: no new version
    deleted = _deleted(db)
    assert deleted == on_sqlite["deleted"]

    before = _local_rows(db)
    # The children's rows: every imported one and the 200 re-analysed traces' again.
    copies = {"messages": 2040, "tool_calls": 720, "tool_results": 720, "findings": 65,
              "error_streaks": 0}  # fmt: skip
    for name, rows in copies.items():
        assert before[name] == imported[name] + rows
    assert before["trace_deletions"] == 101  # import 1's 100 traces and one of import 3
    out = _run("vacuum", "--db", db).decode()
    after = _local_rows(db)
    # What a read sees is all that is left: the rows SQLite holds after the same deletions.
    assert after == {**on_sqlite["rows"], "trace_deletions": 0}
    lines = out.splitlines()
    assert lines[1].split() == ["table", "rows", "before", "rows", "after", "bytes", "before",
                                "bytes", "after"]  # fmt: skip
    printed = {line.split()[0]: line.split()[1:] for line in lines[2:-2]}
    for name in ORDER:
        rows_before, rows_after, bytes_before, bytes_after = (
            int(n.replace(",", "")) for n in printed[f"{name}_local"]
        )
        assert (rows_before, rows_after) == (before[name], after[name])
        assert bytes_after <= bytes_before
    assert _read(db) == on_sqlite["deleted"]["answers"]
    assert _compared_after(db) == on_sqlite["deleted"]["compare"]
    second = _run("vacuum", "--db", db).decode().splitlines()
    assert second[-1].startswith("partitions rebuilt: 0, dropped: 0 ")
    assert _local_rows(db) == after


def test_vacuum_waits_for_a_running_import(chdb_session: Any) -> None:
    """A partition replaced under an import would lose the rows it inserts meanwhile: vacuum
    refuses while an import of the store runs (here: this process's), and runs once it ended."""
    from db.door import start_session

    database = f"t_{uuid.uuid4().hex[:12]}"
    db = f"chdb://?database={database}"
    try:
        session = start_session(make_engine(db), origin="test", paths=[], encoding="o200k_base")
        refused = runner.invoke(app, ["vacuum", "--db", db])
        assert refused.exit_code == 2
        assert refused.stderr == (
            f"Error: import 1 is running (process {os.getpid()} on {socket.gethostname()}): "
            "vacuum once it has finished (vacuum replaces partitions an import may be writing "
            "to)\n"
        )
        session.fail("stopped by the test")
        done = _run("vacuum", "--db", db).decode().splitlines()
        # The import's two revisions (running, failed) are one row once vacuumed.
        imports = next(line.split() for line in done if line.startswith("imports_local "))
        assert imports[2] == "1"
    finally:
        chdb_session.query(f"DROP DATABASE IF EXISTS {database}")
