"""The ``toollens`` command line (import, summary, pairs, lint, compare, reanalyze, serve …).

Every command is also a library call (``ingest.pipeline.import_paths``, ``db.summary.summarize``
…); this module only parses arguments, prints, and sets exit codes: 0 success, 1 ``--strict``
with rejections (or lint over its threshold), 2 usage errors.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer

from db.vocabulary import DEFAULT_ENCODING, DEFAULT_LOOP_K, ENCODINGS

app = typer.Typer(
    name="toollens",
    help="ToolLens: observability for the Tool Messages of AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", help="SQLite file or SQLAlchemy URL (default: $TOOLLENS_DB or toollens.db)"
    ),
]
#: How many rejections ``import`` prints before it only counts them.
MAX_PRINTED_REJECTIONS = 20


def _engine(db: str | None, *, create: bool = False):  # type: ignore[no-untyped-def]
    """The store ``db`` names; a SQLite file that does not exist is an error (exit 2) unless
    ``create`` (the commands that write traces), so that a mistyped ``--db`` never opens an
    empty store."""
    from db.engine import make_engine, missing_sqlite_file

    missing = None if create else missing_sqlite_file(db)
    if missing is not None:
        raise _usage_error(
            f"no database at {missing} (check --db / TOOLLENS_DB; "
            f"`toollens import --db {missing} FILE…` creates one)"
        )
    return make_engine(db)


def _usage_error(message: str) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(2)


def _spool_stdin() -> Path:
    import shutil
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="toollens-stdin-", delete=False) as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp)
    return Path(tmp.name)


@app.command("import")
def import_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Trace files (.json, .jsonl, .gz); - = stdin")
    ],
    db: DbOption = None,
    format_name: Annotated[
        str | None, typer.Option("--format", help="Skip sniffing: one of `toollens formats`")
    ] = None,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any record was rejected")] = False,
    encoding: Annotated[str, typer.Option(help="Token encoding")] = DEFAULT_ENCODING,
    workers: Annotated[
        int | None, typer.Option(help="Tokenizing processes (default: one per core for big inputs)")
    ] = None,
) -> None:
    """Import trace files into the database; prints one summary line."""
    from tqdm import tqdm

    from ingest.pipeline import import_paths
    from ingest.reading import UnknownFormatError, resolve_format

    if encoding not in ENCODINGS:
        raise _usage_error(f"unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")
    try:
        resolve_format(format_name)
    except UnknownFormatError as exc:
        raise _usage_error(str(exc)) from exc
    for path in paths:
        if str(path) != "-" and not path.is_file():
            raise _usage_error(f"{path}: no such file")
    # Sniffing reads the head before parsing starts over, which a pipe cannot do: spool it.
    spooled = _spool_stdin() if any(str(p) == "-" for p in paths) else None
    real_paths = [spooled if str(p) == "-" and spooled else p for p in paths]
    total = sum(p.stat().st_size for p in real_paths)
    bar = tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        desc="importing",
        disable=not sys.stderr.isatty(),
        file=sys.stderr,
    )
    engine = _engine(db, create=True)
    try:
        summary = import_paths(
            engine,
            real_paths,
            format_name=format_name,
            encoding=encoding,
            workers=workers,
            progress=bar.update,
            display_names=[str(p) for p in paths],
        )
    finally:
        bar.close()
        if spooled is not None:
            spooled.unlink(missing_ok=True)
    for rejected in summary.rejections[:MAX_PRINTED_REJECTIONS]:
        typer.echo(f"{rejected.location()}: {rejected.reason}: {rejected.message}", err=True)
    if summary.rejected > MAX_PRINTED_REJECTIONS:
        more = summary.rejected - MAX_PRINTED_REJECTIONS
        typer.echo(f"… and {more} more rejected (see the Imports page)", err=True)
    typer.echo(summary.line())
    if strict and summary.rejected:
        raise typer.Exit(1)


@app.command("formats")
def formats_command() -> None:
    """List the trace formats ToolLens reads."""
    from ingest import formats

    for fmt in formats.FORMATS:
        typer.echo(f"{fmt.name:<18} {fmt.description}")


@app.command("summary")
def summary_command(
    db: DbOption = None,
    loop_k: Annotated[
        int, typer.Option("--loop-k", min=2, help="Loop threshold k")
    ] = DEFAULT_LOOP_K,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Headline figures of the store: pairing, status, error types, tokens, loops, suggestions."""
    from db.summary import summarize

    data = summarize(_engine(db), loop_k=loop_k)
    if as_json:
        typer.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
        return
    from ingest.report_text import summary_text

    typer.echo(summary_text(data))


@app.command("pairs")
def pairs_command(
    db: DbOption = None,
    out_format: Annotated[str, typer.Option("--format", help="jsonl or csv")] = "jsonl",
) -> None:
    """One row per call or unpaired result, for notebooks and spreadsheets."""
    import csv

    from db.queries.pairs import PAIR_COLUMNS, iter_pairs

    if out_format not in ("jsonl", "csv"):
        raise _usage_error(f"unknown output format {out_format!r}; use jsonl or csv")
    engine = _engine(db)
    out = sys.stdout
    if out_format == "csv":
        writer = csv.DictWriter(out, fieldnames=list(PAIR_COLUMNS), lineterminator="\n")
        writer.writeheader()
        for row in iter_pairs(engine):
            writer.writerow(row)
    else:
        for row in iter_pairs(engine):
            out.write(orjson.dumps(row).decode() + "\n")


@app.command("export")
def export_command(
    trace_id: Annotated[str, typer.Argument(help="The trace's id as the dashboard shows it")],
    db: DbOption = None,
    out_format: Annotated[str, typer.Option("--format", help="md, html or json")] = "md",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this file (default: standard output)")
    ] = None,
    loop_k: Annotated[
        int, typer.Option("--loop-k", min=2, help="Loop threshold k")
    ] = DEFAULT_LOOP_K,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=0, help="Characters kept per message (0 = all)")
    ] = 4000,
) -> None:
    """Write the incident report of one trace: figures, flagged pairs, notes, conversation."""
    from ingest.report import REPORT_FORMATS, UnknownTraceError, build_report, render

    if out_format not in REPORT_FORMATS:
        raise _usage_error(f"unknown report format {out_format!r}; use md, html or json")
    try:
        report = build_report(_engine(db), trace_id, loop_k=loop_k, max_chars=max_chars)
    except UnknownTraceError as exc:
        raise _usage_error(f"{exc}; `toollens pairs` lists the trace ids") from exc
    text = render(report, out_format)
    if out is None:
        typer.echo(text, nl=False)
        return
    out.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out} ({len(report['flagged'])} flagged pairs)", err=True)


@app.command("lint")
def lint_command(
    paths: Annotated[list[Path], typer.Argument(help="Trace files to check")],
    max_findings: Annotated[
        int, typer.Option("--max-findings", min=0, help="Exit 1 above this many findings")
    ] = 0,
    format_name: Annotated[
        str | None, typer.Option("--format", help="Skip sniffing: one of `toollens formats`")
    ] = None,
    loop_k: Annotated[int, typer.Option("--loop-k", min=2)] = DEFAULT_LOOP_K,
) -> None:
    """Analyze trace files without a database and print findings per tool (a CI gate)."""
    from ingest.lint import lint_paths
    from ingest.reading import UnknownFormatError

    for path in paths:
        if not path.is_file():
            raise _usage_error(f"{path}: no such file")
    try:
        report = lint_paths(paths, format_name=format_name, loop_k=loop_k)
    except UnknownFormatError as exc:
        raise _usage_error(str(exc)) from exc
    typer.echo(report.text())
    if report.total_findings > max_findings:
        raise typer.Exit(1)


@app.command("compare")
def compare_command(
    baseline: Annotated[
        str, typer.Option("--baseline", help="Baseline traces as a URL query: import=3")
    ],
    candidate: Annotated[
        str, typer.Option("--candidate", help="Candidate traces: model=gpt-4o&start=2026-01-01")
    ],
    db: DbOption = None,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            help="Exit 1 when one of these metrics is worse with evidence (overall or for any "
            "tool): error_rate,loop_rate,… or error_type:NAME / finding:NAME",
        ),
    ] = "",
    loop_k: Annotated[int, typer.Option("--loop-k", min=2, help="Loop threshold k")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Did the change help? Baseline vs candidate traces, per tool and overall (a CI gate)."""
    from db.compare_stats import metric_spec
    from db.filters import FilterQueryError, format_query, parse_query
    from db.queries.compare import compare_sets
    from ingest.compare_report import comparison_data, comparison_text

    try:
        base, cand = parse_query(baseline), parse_query(candidate)
    except FilterQueryError as exc:
        raise _usage_error(f"filter: {exc}") from exc
    gate = {name.strip() for name in fail_on.split(",") if name.strip()}
    for name in sorted(gate):
        try:
            metric_spec(name)
        except ValueError as exc:
            raise _usage_error(f"--fail-on: {exc}") from exc
    comparison = compare_sets(_engine(db), base, cand, loop_k=loop_k)
    failed = comparison.worse(gate) if gate else []
    labels = format_query(base) or "all traces", format_query(cand) or "all traces"
    if as_json:
        data = comparison_data(comparison, *labels, failed)
        typer.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(comparison_text(comparison, *labels, failed))
    if failed:
        raise typer.Exit(1)


@app.command("reanalyze")
def reanalyze_command(db: DbOption = None) -> None:
    """Recompute every derived fact from stored traces (after a rule changed); keeps corrections."""
    from ingest.reanalyze import reanalyze

    count = reanalyze(_engine(db))
    typer.echo(f"reanalyzed {count} traces")


@app.command("serve")
def serve_command(
    db: DbOption = None,
    port: Annotated[int, typer.Option(help="Port")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind (default: this machine only)")] = (
        "127.0.0.1"
    ),
) -> None:
    """Open the dashboard (Streamlit) on http://HOST:PORT."""
    from db.engine import resolve_url

    url = resolve_url(db)
    _engine(url).dispose()  # migrate before the first page asks
    app_path = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_path),
        "--server.address", host, "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
        "--", "--db", url,
    ]  # fmt: skip
    typer.echo(f"ToolLens dashboard on http://{host}:{port} (database: {url})", err=True)
    sys.stdout.flush()
    # Become the Streamlit server (no child left behind when this process is stopped).
    os.execve(sys.executable, command, {**os.environ, "TOOLLENS_DB": url})


@app.command("receive")
def receive_command(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Address to bind (default: this machine only)")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port (OTLP/HTTP default)")] = 4318,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="TOOLLENS_OTLP_TOKEN",
            help="Bearer token exporters must send (required off loopback)",
        ),
    ] = None,
    spool: Annotated[
        Path | None,
        typer.Option(help="Spool directory (default: next to the SQLite file)"),
    ] = None,
    max_body_mib: Annotated[
        float, typer.Option(help="Largest accepted body, decompressed, in MiB")
    ] = 20,
    quiet_seconds: Annotated[
        float, typer.Option(help="Store a trace once it got no new span for this long")
    ] = 1.0,
) -> None:
    """Receive live traces over OTLP/HTTP (POST /v1/traces) and store them as they arrive."""
    from db.engine import resolve_url
    from ingest.otlp_receiver import ReceiverConfigError, ReceiverSettings, check_bind, serve
    from ingest.otlp_spool import default_spool_dir

    try:
        check_bind(host, token)
    except ReceiverConfigError as exc:
        raise _usage_error(str(exc)) from exc
    url = resolve_url(db)
    settings = ReceiverSettings(
        spool_dir=spool or default_spool_dir(url),
        token=token,
        max_body_bytes=int(max_body_mib * 1024 * 1024),
        quiet_seconds=quiet_seconds,
    )
    typer.echo(
        f"ToolLens OTLP receiver on http://{host}:{port}/v1/traces "
        f"(database: {url}, spool: {settings.spool_dir})",
        err=True,
    )
    serve(_engine(url, create=True), settings, host=host, port=port)


@app.command("demo")
def demo_command(
    db: DbOption = None,
    out: Annotated[Path, typer.Option(help="Where to write the generated traces")] = Path(
        ".demo/traces"
    ),
    seed: Annotated[int, typer.Option(help="Scenario seed")] = 7,
) -> None:
    """Generate the scenario traces (every situation ToolLens detects) and import them."""
    from ingest.pipeline import import_paths
    from ingest.scenarios import generate

    generate(out, seed=seed)
    files = sorted(p for p in out.iterdir() if p.name != "ground_truth.json")
    summary = import_paths(_engine(db, create=True), files, origin="demo")
    typer.echo(summary.line())


def main() -> None:
    """Entry point for ``python -m ingest.cli``."""
    app()


if __name__ == "__main__":
    main()
