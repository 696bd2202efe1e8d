"""The ``toollens`` command line (import, summary, pairs, lint, compare, reanalyze, serve …).

Every command is also a library call (``ingest.importing.pipeline.import_paths``,
``db.queries.summary.summarize`` …); this module only parses arguments, prints, and sets exit codes:
0 success, 1 ``--strict`` with rejections (or lint over its threshold), 2 usage errors.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, TextIO

import orjson
import typer

from db.contract.vocabulary import DEFAULT_ENCODING, DEFAULT_LOOP_K, ENCODINGS, counted

app = typer.Typer(
    name="toollens",
    help="ToolLens: observability for the Tool Messages of AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help texts are plain text: Rich markup would read `[default: 3]`, `[auth]` or
    # `[tool.toollens.lint]` as style tags and drop them.
    rich_markup_mode=None,
)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", help="SQLite file or SQLAlchemy URL (default: $TOOLLENS_DB or toollens.db)"
    ),
]
RedactOption = Annotated[
    str,
    typer.Option(
        "--redact",
        envvar="TOOLLENS_REDACT",
        help="Replace secrets by [REDACTED:kind] before storing: off, default or strict",
    ),
]
RedactRulesOption = Annotated[
    Path | None,
    typer.Option(
        "--redact-rules",
        envvar="TOOLLENS_REDACT_RULES",
        help="Team redaction rules (TOML: extra secret field names and regexes)",
    ),
]
PricesOption = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        envvar="TOOLLENS_PRICES",
        help="Price table (TOML: USD per million tokens per model) for what each Tool Message "
        "costs; default: the dated table shipped with ToolLens",
    ),
]
#: The loop threshold of the commands that read a store or compare runs (``lint`` words its
#: own, optional one: its default may come from pyproject.toml).
LoopKOption = Annotated[int, typer.Option("--loop-k", min=2, help="Loop threshold k")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON")]
YesOption = Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation")]


def _use_prices(path: Path | None) -> None:
    """Check the price table at ``path`` and put it in force for this process and its workers
    (``ingest.analysis.prices.current`` reads :data:`ingest.analysis.prices.PRICES_ENV`)."""
    if path is None:
        return
    from ingest.analysis import prices

    try:
        prices.load(str(path))
    except prices.PriceError as exc:
        raise _usage_error(str(exc)) from exc
    os.environ[prices.PRICES_ENV] = str(path)


#: How many rejections ``import`` prints before it only counts them.
MAX_PRINTED_REJECTIONS = 20
#: Files of a named folder that were not read, named on standard error (then a count).
SKIPPED_NAMED = 5


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("toollens")
        except PackageNotFoundError:  # run from a checkout that was never installed
            number = "unknown (not installed)"
        typer.echo(f"toollens {number}")
        raise typer.Exit()


@app.callback()
def main_options(
    db_password_file: Annotated[
        Path | None,
        typer.Option(
            "--db-password-file",
            envvar="TOOLLENS_DB_PASSWORD_FILE",
            help="Read the database password from this file (else $TOOLLENS_DB_PASSWORD)",
        ),
    ] = None,
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the installed ToolLens version and exit",
        ),
    ] = False,
) -> None:
    """ToolLens: observability for the Tool Messages of AI agents."""
    if db_password_file is not None:
        # Imported here: `toollens lint` runs where SQLAlchemy is not installed.
        from db.engine import PASSWORD_ENV

        try:
            password = db_password_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise _usage_error(f"--db-password-file: {exc.strerror}: {db_password_file}") from exc
        # Through the environment, which child processes (the dashboard) inherit and `ps`
        # does not show.
        os.environ[PASSWORD_ENV] = password


#: Why ``serve --otlp`` refuses a chdb store: the dashboard and the receiver are two processes,
#: and chdb keeps a store to the one process that opened it.
CHDB_OTLP_REFUSED = (
    "--otlp: a chdb store opens in one process only, and the dashboard and the receiver are "
    "two: run `toollens receive` alone, or use a ClickHouse cluster"
)


def _engine(db: str | None, *, create: bool = False):  # type: ignore[no-untyped-def]
    """The store ``db`` names (SQLite, PostgreSQL or ClickHouse); a SQLite file that does not
    exist is an error (exit 2) unless ``create`` (the commands that write traces), so that a
    mistyped ``--db`` never opens an empty store; a store written by a newer ToolLens, or one
    that cannot be reached (no server, no such database, a refused password), says so in one
    line (exit 2)."""
    from db.engine import StoreConnectionError, make_engine, missing_sqlite_file
    from db.migrate import NewerStoreError

    missing = None if create else missing_sqlite_file(db)
    if missing is not None:
        raise _usage_error(
            f"no database at {missing} (check --db / TOOLLENS_DB; "
            f"`toollens import --db {missing} FILE…` creates one)"
        )
    try:
        engine = make_engine(db)
    except NewerStoreError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    except StoreConnectionError as exc:
        raise _usage_error(str(exc)) from None
    return engine


def _usage_error(message: str) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(2)


def _inputs(paths: list[Path], *, stdin: bool = False) -> list[Path]:
    """The files to read (``ingest.input.paths``: a folder stands for its trace files); says on
    standard error which files of a named folder were not read."""
    from ingest.input.paths import TRACE_SUFFIXES_TEXT, MissingInput, expand

    try:
        inputs = expand(paths, stdin=stdin)
    except MissingInput as exc:
        raise _usage_error(str(exc)) from exc
    if inputs.skipped:
        names = ", ".join(str(p) for p in inputs.skipped[:SKIPPED_NAMED])
        more = len(inputs.skipped) - SKIPPED_NAMED
        typer.echo(
            f"Note: {counted(len(inputs.skipped), 'file')} in the folders named "
            f"{'is not a trace file' if len(inputs.skipped) == 1 else 'are not trace files'} "
            f"({TRACE_SUFFIXES_TEXT}) and were not read: {names}"
            + (f" and {more} more" if more > 0 else ""),
            err=True,
        )
    return inputs.files


def _redaction(mode: str, rules: Path | None):  # type: ignore[no-untyped-def]
    """The import's redaction settings, checked (mode and rules file) before anything runs."""
    from ingest.redaction.rules import RulesFileError
    from ingest.redaction.traces import RedactionSettings

    try:
        settings = RedactionSettings(mode, str(rules) if rules else None)
        settings.redactor()
    except (ValueError, OSError, RulesFileError) as exc:
        raise _usage_error(f"--redact: {exc}") from exc
    return settings


def _spool_stdin() -> Path:
    import shutil
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="toollens-stdin-", delete=False) as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp)
    return Path(tmp.name)


@app.command("import")
def import_command(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Trace files or folders of them (.json, .jsonl, .gz); - = stdin"),
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
    incremental: Annotated[
        bool,
        typer.Option(
            "--incremental/--no-incremental",
            help="Skip unchanged files, read only what was appended (--no-incremental: all)",
        ),
    ] = True,
    full_hash: Annotated[
        bool,
        typer.Option("--full-hash", help="Tell unchanged files by a hash of their whole content"),
    ] = False,
    max_record_mb: Annotated[
        float | None,
        typer.Option(
            help="Reject a record larger than this (MiB; default $TOOLLENS_MAX_RECORD_MB or 256)"
        ),
    ] = None,
    max_decompressed_gb: Annotated[
        float | None,
        typer.Option(
            help="Stop reading an input past this many decompressed GiB "
            "(default $TOOLLENS_MAX_DECOMPRESSED_GB or 8)"
        ),
    ] = None,
    max_compression_ratio: Annotated[
        float | None,
        typer.Option(
            help="Stop reading a compressed input that decompresses to more than this many "
            "times its size, past its first 64 MiB (default $TOOLLENS_MAX_COMPRESSION_RATIO "
            "or 200)"
        ),
    ] = None,
    redact: RedactOption = "default",
    redact_rules: RedactRulesOption = None,
    prices: PricesOption = None,
) -> None:
    """Import trace files into the database; prints one summary line.

    Secrets are redacted before anything is stored (--redact default); the summary line
    counts them per kind. Interrupted (Ctrl-C or SIGTERM), it stops at once, keeps what it
    wrote and exits 130 (143 for SIGTERM); the same command run again completes the import.
    """
    from tqdm import tqdm

    from ingest.importing.pipeline import import_paths
    from ingest.input.reading import ReadLimits, UnknownFormatError, resolve_format

    if encoding not in ENCODINGS:
        raise _usage_error(f"unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")
    try:
        resolve_format(format_name)
    except UnknownFormatError as exc:
        raise _usage_error(str(exc)) from exc
    try:
        limits = ReadLimits.of(max_record_mb, max_decompressed_gb, max_compression_ratio)
    except ValueError as exc:
        raise _usage_error(str(exc)) from exc
    redaction = _redaction(redact, redact_rules)
    _use_prices(prices)
    paths = _inputs(paths, stdin=True)
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
    terminated: list[int] = []
    previous_handler = signal.signal(signal.SIGTERM, _interrupt_on_sigterm(terminated))
    try:
        summary = import_paths(
            engine,
            real_paths,
            format_name=format_name,
            encoding=encoding,
            workers=workers,
            progress=bar.update,
            display_names=[str(p) for p in paths],
            # A spooled stdin is a new temporary file each time: nothing to remember it by.
            incremental=incremental and spooled is None,
            full_hash=full_hash,
            limits=limits,
            redaction=redaction,
        )
    except KeyboardInterrupt:
        typer.echo(
            "toollens: import interrupted; what was written is kept, "
            "run the same command again to complete it",
            err=True,
        )
        raise typer.Exit(128 + (terminated[0] if terminated else signal.SIGINT)) from None
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
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


def _interrupt_on_sigterm(received: list[int]) -> Callable[[int, FrameType | None], None]:
    """A SIGTERM handler that stops the import as Ctrl-C does (noting the signal)."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    return handler


@app.command("formats")
def formats_command() -> None:
    """List the trace formats ToolLens reads."""
    from ingest import formats

    for fmt in formats.FORMATS:
        typer.echo(f"{fmt.name:<18} {fmt.description}")


@app.command("summary")
def summary_command(
    db: DbOption = None,
    loop_k: LoopKOption = DEFAULT_LOOP_K,
    as_json: JsonOption = False,
) -> None:
    """Headline figures of the store: pairing, status, error types, tokens, loops, suggestions."""
    from db.queries.summary import summarize

    data = summarize(_engine(db), loop_k=loop_k)
    if as_json:
        typer.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
        return
    from ingest.outputs.report_text import summary_text

    typer.echo(summary_text(data))


@app.command("pairs")
def pairs_command(
    db: DbOption = None,
    out_format: Annotated[str, typer.Option("--format", help="jsonl or csv")] = "jsonl",
) -> None:
    """One row per call or unpaired result, for notebooks and spreadsheets."""
    if out_format not in ("jsonl", "csv"):
        raise _usage_error(f"unknown output format {out_format!r}; use jsonl or csv")
    try:
        _write_pairs(_engine(db), sys.stdout, out_format)
    except OSError as exc:
        if not _reader_gone(exc):
            raise
        # The reader stopped reading (`toollens pairs | head`): stop quietly, status 1, as
        # Python's own writes do; standard output to nowhere, so exiting flushes nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(1) from None


def _reader_gone(exc: OSError) -> bool:
    """``exc`` says the pipe to standard output is closed: Python's ``BrokenPipeError``, or
    the error Polars' writer raises, without an errno but Rust's text of EPIPE."""
    import errno

    return exc.errno == errno.EPIPE or str(exc).endswith(f"(os error {errno.EPIPE})")


def _write_pairs(engine: Any, out: TextIO, out_format: str) -> None:
    """The pairs from the Arrow tables the ADBC drivers read (``db.queries.pairs
    .iter_pair_tables``). CSV (RFC 4180: every text value quoted, an empty field for a missing
    value, times as ``"2026-11-03 09:00:00.000000Z"``) by Arrow's C++ CSV writer
    (``ingest.outputs.pairs_csv``); JSON Lines by Polars' writer (``ingest.outputs.arrow_jsonl``),
    keeping the values' types."""
    from contextlib import closing

    from db.queries.pairs import PAIR_COLUMNS, PAIR_SCHEMA, iter_pair_tables
    from ingest.outputs.arrow_jsonl import write_json_lines
    from ingest.outputs.pairs_csv import write_csv

    out.flush()
    binary = out.buffer
    with closing(iter_pair_tables(engine)) as tables:
        if out_format == "csv":
            write_csv(tables, PAIR_SCHEMA, binary)
        else:
            # Polars writes each table's lines to the output's descriptor itself, from its own
            # threads, while the reading threads read the next ranges (encoding them into bytes
            # first would cost a copy into Python bytes and most of the command's page faults:
            # docs/performance.md).
            for table in tables:
                write_json_lines(table, binary, PAIR_COLUMNS)
    binary.flush()


@app.command("export")
def export_command(
    trace_id: Annotated[str, typer.Argument(help="The trace's id as the dashboard shows it")],
    db: DbOption = None,
    out_format: Annotated[str, typer.Option("--format", help="md, html or json")] = "md",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to this file (default: standard output)")
    ] = None,
    loop_k: LoopKOption = DEFAULT_LOOP_K,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=0, help="Characters kept per message (0 = all)")
    ] = 4000,
) -> None:
    """Write the incident report of one trace: figures, flagged pairs, notes, conversation."""
    from ingest.outputs.report import REPORT_FORMATS, UnknownTraceError, build_report, render

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
    typer.echo(f"wrote {out} ({counted(len(report['flagged']), 'flagged pair')})", err=True)


@app.command("lint")
def lint_command(
    paths: Annotated[list[Path], typer.Argument(help="Trace files (or folders of them) to check")],
    max_findings: Annotated[
        int | None,
        typer.Option("--max-findings", min=0, help="Exit 1 above this many findings [default: 0]"),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--format", help="Output: text, json, sarif or junit [default: text]"),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", help="Leave out this finding kind (repeatable)"),
    ] = None,
    input_format: Annotated[
        str | None,
        typer.Option("--input-format", help="Skip sniffing: one of `toollens formats`"),
    ] = None,
    loop_k: Annotated[
        int | None,
        typer.Option(
            "--loop-k",
            min=2,
            help="Loop threshold: a call repeated with the same arguments this many times in "
            f"a trace is a loop [default: {DEFAULT_LOOP_K}]",
        ),
    ] = None,
) -> None:
    """Analyze trace files without a database and list every finding (a CI gate).

    Defaults come from the nearest pyproject.toml with a [tool.toollens.lint] table."""
    from ingest.input.reading import UnknownFormatError
    from ingest.outputs.lint import LINT_KINDS, lint_paths
    from ingest.outputs.lint_config import LintConfigError, find_config, load_config
    from ingest.outputs.lint_output import OUTPUT_FORMATS, render

    try:
        config = load_config(find_config(Path.cwd()), LINT_KINDS, OUTPUT_FORMATS)
    except LintConfigError as exc:
        raise _usage_error(str(exc)) from exc
    chosen = output or config.output or "text"
    if chosen not in OUTPUT_FORMATS:
        hint = f"; to skip sniffing use --input-format {chosen}" if _is_input_format(chosen) else ""
        raise _usage_error(f"--format must be one of {', '.join(OUTPUT_FORMATS)}{hint}")
    for kind in ignore or []:
        if kind not in LINT_KINDS:
            raise _usage_error(f"--ignore: unknown finding kind {kind!r}")
    paths = _inputs(paths)
    try:
        report = lint_paths(
            paths,
            format_name=input_format,
            loop_k=loop_k or config.loop_k or DEFAULT_LOOP_K,
            ignore={*config.ignore, *(ignore or [])},
        )
    except UnknownFormatError as exc:
        raise _usage_error(str(exc)) from exc
    typer.echo(render(report, chosen), nl=False)
    limit = max_findings if max_findings is not None else (config.max_findings or 0)
    if report.total_findings > limit:
        raise typer.Exit(1)


def _is_input_format(name: str) -> bool:
    from ingest.formats import format_names

    return name in format_names()


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
    loop_k: LoopKOption = 3,
    as_json: JsonOption = False,
) -> None:
    """Did the change help? Baseline vs candidate traces, per tool and overall (a CI gate)."""
    from db.queries.compare import FilterRefused, compare_sets
    from db.queries.compare_stats import metric_spec
    from db.queries.filters import FilterQueryError, format_query, parse_query
    from ingest.outputs.compare_report import comparison_data, comparison_text

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
    try:
        comparison = compare_sets(_engine(db), base, cand, loop_k=loop_k)
    except FilterRefused as exc:
        raise _usage_error(f"filter: {exc}") from None
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
def reanalyze_command(db: DbOption = None, prices: PricesOption = None) -> None:
    """Recompute every derived fact from stored traces (after a rule or the price table
    changed); keeps corrections."""
    from ingest.importing.reanalyze import reanalyze

    _use_prices(prices)
    count = reanalyze(_engine(db))
    typer.echo(f"reanalyzed {counted(count, 'trace')}")


def _confirm_deletion(engine, selection, yes: bool) -> None:  # type: ignore[no-untyped-def]
    """Print what ``selection`` deletes, per table; ask (unless ``yes``); delete."""
    from db.session import Maintenance

    store = Maintenance(engine)
    counts = store.count(selection)
    if not counts.get(selection.table):
        typer.echo(f"{selection.description}: nothing to delete.")
        return
    listed = ", ".join(f"{table} {n}" for table, n in counts.items())
    typer.echo(f"{selection.description}: {listed}")
    if not yes:
        try:
            agreed = typer.confirm("Delete these rows?", default=False)
        except typer.Abort:
            # No answer can come (stdin closed, e.g. a cron job): never delete on a guess.
            typer.echo("")
            raise _usage_error(
                "not deleting without confirmation: no answer on stdin; pass --yes"
            ) from None
        if not agreed:
            typer.echo("Nothing deleted.")
            raise typer.Exit(1)
    store.delete(selection)
    typer.echo("Deleted. `toollens vacuum` gives the space back to the disk.")


@app.command("delete")
def delete_command(
    trace: Annotated[
        str | None, typer.Option("--trace", help="A trace's id as the dashboard shows it")
    ] = None,
    import_id: Annotated[
        int | None, typer.Option("--import", help="An import's number (Imports page)")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option("--before", help="Every import started before this date (YYYY-MM-DD, UTC)"),
    ] = None,
    db: DbOption = None,
    yes: YesOption = False,
) -> None:
    """Delete a trace, an import or everything imported before a date, with every row that
    belongs to it (messages, calls, results, findings, notes, rejected records); asks first."""
    from datetime import UTC, date, datetime

    from db.writes.deletion import Selection, import_by_id, imports_before, traces_by_display_id

    named = [x for x in (trace, import_id, before) if x is not None]
    if len(named) != 1:
        raise _usage_error("name one of --trace ID, --import N or --before DATE")
    selection: Selection
    if trace is not None:
        selection = traces_by_display_id(trace)
    elif import_id is not None:
        selection = import_by_id(import_id)
    else:
        assert before is not None
        try:
            day = date.fromisoformat(before)
        except ValueError:
            raise _usage_error(f"--before: {before!r} is not a date (YYYY-MM-DD)") from None
        selection = imports_before(datetime(day.year, day.month, day.day, tzinfo=UTC))
    _confirm_deletion(_engine(db), selection, yes)


@app.command("prune")
def prune_command(
    keep_days: Annotated[
        int, typer.Option("--keep-days", min=1, help="Keep the imports of the last N days")
    ],
    db: DbOption = None,
    yes: YesOption = False,
) -> None:
    """Retention: delete every import older than N days with everything it brought; asks first."""
    from datetime import UTC, datetime, timedelta

    from db.writes.deletion import imports_before

    cutoff = datetime.now(UTC) - timedelta(days=keep_days)
    _confirm_deletion(_engine(db), imports_before(cutoff), yes)


@app.command("copy")
def copy_command(
    source: Annotated[
        str,
        typer.Option("--from", help="The store to copy: SQLite file, SQLAlchemy or ClickHouse URL"),
    ],
    target: Annotated[
        str,
        typer.Option("--to", help="An empty store (or one holding an unfinished copy) to fill"),
    ],
    batch_rows: Annotated[
        int | None,
        typer.Option("--batch-rows", min=1, help="Rows read and written per batch [default: 5000]"),
    ] = None,
    leave_out: Annotated[
        str | None,
        typer.Option(
            "--leave-out",
            help="Tables a ClickHouse store has no place for, to leave behind (comma-separated:"
            " annotations,trace_versions,trace_updates); without it a source holding them is"
            " refused",
        ),
    ] = None,
) -> None:
    """Copy a whole store to another engine (SQLite, PostgreSQL, ClickHouse), ids kept; an
    interrupted copy continues when run again. Prints the rows per table and checks that the
    target's summary equals the source's (exit 1 when not)."""
    from db.bulk.copy import BATCH_ROWS, CopyInterrupted, CopyRefused
    from db.session import copy_store

    def progress(table: str, rows: int) -> None:
        typer.echo(f"copied {table}: {rows:,} rows", err=True)

    started = time.perf_counter()
    try:
        result = copy_store(
            source,
            target,
            batch_rows=batch_rows or BATCH_ROWS,
            progress=progress,
            leave_out=frozenset(n.strip() for n in (leave_out or "").split(",") if n.strip()),
        )
    except CopyRefused as exc:
        raise _usage_error(str(exc)) from None
    except (KeyboardInterrupt, CopyInterrupted):
        typer.echo(
            "copy interrupted: the target keeps every batch written; run the same command "
            "again to continue",
            err=True,
        )
        raise typer.Exit(130) from None
    seconds = time.perf_counter() - started
    if result.resumed_rows:
        typer.echo(f"resumed: {result.resumed_rows:,} rows had been copied before")
    width = max(len(name) for name in result.counts)
    typer.echo(f"{'table':<{width}}  {'source':>12}  {'target':>12}")
    for name, (in_source, in_target) in result.counts.items():
        mark = "" if in_source == in_target else "  DIFFERS"
        typer.echo(f"{name:<{width}}  {in_source:>12,}  {in_target:>12,}{mark}")
    typer.echo(f"copied {result.copied_rows:,} rows in {seconds:.1f} s")
    for note in result.notes:
        typer.echo(note)
    if result.summary_differences:
        typer.echo("summary: differs")
        for line in result.summary_differences:
            typer.echo(f"  {line}")
    else:
        typer.echo("summary: identical")
    if result.summary_differences or not result.counts_match:
        raise typer.Exit(1)


@app.command("vacuum")
def vacuum_command(db: DbOption = None) -> None:
    """Give the space of deleted rows back (SQLite: rewrites the file; PostgreSQL: VACUUM;
    ClickHouse: rebuilds the partitions holding deleted or replaced rows)."""
    from db.clickhouse.vacuum import VacuumRefused
    from db.engine import display_url
    from db.session import Maintenance

    engine = _engine(db)
    try:
        report = Maintenance(engine).vacuum()
    except VacuumRefused as exc:
        raise _usage_error(str(exc)) from None
    typer.echo(f"vacuumed: {display_url(engine.url)}")
    if report is not None:
        _print_vacuum(report)


def _print_vacuum(report: Any) -> None:
    """What a ClickHouse vacuum took off the disk, per local table and in all."""
    lines = [(t.table, t.rows_before, t.rows_after, t.bytes_before, t.bytes_after)
             for t in report.tables]  # fmt: skip
    lines.append(("total", *(sum(line[i] for line in lines) for i in range(1, 5))))
    width = max(len(line[0]) for line in lines)
    heads = ("rows before", "rows after", "bytes before", "bytes after")
    typer.echo(f"{'table':<{width}}" + "".join(f"  {head:>14}" for head in heads))
    for name, *figures in lines:
        typer.echo(f"{name:<{width}}" + "".join(f"  {n:>14,}" for n in figures))
    typer.echo(
        f"partitions rebuilt: {report.rebuilt}, dropped: {report.dropped} (the old parts leave "
        "the disk once no query reads them)"
    )


@app.command("rebuild-rollups")
def rebuild_rollups_command(db: DbOption = None) -> None:
    """Recount the summary tables the pages read (the import keeps them exact; this is for
    recovery, e.g. after rows were changed by hand)."""
    from db.engine import display_url
    from db.session import Maintenance

    engine = _engine(db)
    started = time.perf_counter()
    traces = Maintenance(engine).rebuild_rollups()
    seconds = time.perf_counter() - started
    typer.echo(
        f"rollups rebuilt: {counted(traces, 'trace', thousands=True)} in {seconds:.1f} s "
        f"({display_url(engine.url)})"
    )


@app.command("serve")
def serve_command(
    db: DbOption = None,
    port: Annotated[int, typer.Option(help="Port")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind (default: this machine only)")] = (
        "127.0.0.1"
    ),
    otlp: Annotated[
        bool, typer.Option("--otlp", help="Also receive live traces over OTLP/HTTP (see receive)")
    ] = False,
    otlp_port: Annotated[int, typer.Option(help="Port of the OTLP receiver (with --otlp)")] = 4318,
    secrets: Annotated[
        Path | None,
        typer.Option(help="secrets.toml with [auth] (login) and [toollens.roles]"),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth", help="Listen beyond this machine without login (every page warns)"
        ),
    ] = False,
) -> None:
    """Open the dashboard (Streamlit) on http://HOST:PORT; with --otlp, also run the OTLP
    receiver on HOST:OTLP_PORT (one command: stopping it stops both).

    Off loopback it needs login configured ([auth] in .streamlit/secrets.toml or --secrets)
    unless --no-auth says otherwise, or anyone on the network could read every trace.
    """
    from dashboard.access import (
        EXPOSED_ENV,
        auth_configured,
        default_secrets_paths,
        is_loopback,
        read_secrets,
    )
    from db.engine import display_url, resolve_url

    paths = default_secrets_paths(Path.cwd()) + ([secrets] if secrets else [])
    if secrets is not None and not secrets.is_file():
        raise _usage_error(f"{secrets}: no such secrets file")
    try:
        login = auth_configured(read_secrets(paths).get("auth"))
    except (OSError, ValueError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise _usage_error(f"cannot read the secrets: {exc}") from exc
    exposed = not is_loopback(host) and not login
    if exposed and not no_auth:
        raise _usage_error(
            f"refusing to serve on {host} without login: configure [auth] in "
            ".streamlit/secrets.toml (or --secrets FILE), pass --no-auth to serve anyway, "
            "or bind to 127.0.0.1"
        )
    url = resolve_url(db)
    if otlp and url.startswith("chdb:"):
        raise _usage_error(CHDB_OTLP_REFUSED)
    _engine(url).dispose()  # migrate before the first page asks
    wanted = [("the dashboard", port, "--port")]
    if otlp:
        wanted.append(("the OTLP receiver", otlp_port, "--otlp-port"))
    for what, number, option in wanted:
        problem = _port_taken(host, number)
        if problem is not None:
            raise _usage_error(
                f"port {number} on {host} is not available for {what} ({problem}); "
                f"stop what listens there or choose another with {option}"
            )
    app_path = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
    # The URL goes through the environment, not the command line: anyone on the machine can
    # read a process's arguments (`ps`), only its owner its environment.
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_path),
        "--server.address", host, "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
        # Streamlit reads exactly the files checked above (a later file wins, as there).
        *[arg for path in paths for arg in ("--secrets.files", str(path))],
    ]  # fmt: skip
    typer.echo(
        f"ToolLens dashboard on http://{host}:{port} (database: {display_url(url)})", err=True
    )
    sys.stdout.flush()
    env = {**os.environ, "TOOLLENS_DB": url, EXPOSED_ENV: "1" if exposed else "0"}
    if otlp:
        _serve_with_receiver(command, env, url=url, host=host, port=otlp_port)
        return
    # Become the Streamlit server (no child left behind when this process is stopped).
    os.execve(sys.executable, command, env)


def _port_taken(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (``None`` when it can), found by binding it
    the way the servers do (SO_REUSEADDR, as Tornado and uvicorn set it: a port whose last
    connections are still closing counts as free, one with a listener does not)."""
    import socket

    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return f"cannot resolve {host}: {exc.strerror or exc}"
    for family, kind, proto, _name, address in addresses:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                return exc.strerror or str(exc)
    return None


def _serve_with_receiver(
    dashboard: list[str], env: dict[str, str], *, url: str, host: str, port: int
) -> None:
    """``serve --otlp``: the dashboard and ``toollens receive`` as two children of this
    process, which forwards stop signals to both and stops one when the other ends."""
    from ingest.otlp.receiver import ReceiverConfigError, check_bind
    from ingest.supervise import run_together

    try:
        # Refused here, before the dashboard starts, rather than by a dying child.
        check_bind(host, os.environ.get("TOOLLENS_OTLP_TOKEN"))
    except ReceiverConfigError as exc:
        raise _usage_error(str(exc)) from exc
    receiver = [
        sys.executable,
        "-m",
        "ingest.cli",
        "receive",
        "--host",
        host,
        "--port",
        str(port),
    ]  # fmt: skip  (the database comes in TOOLLENS_DB: a password never shows in `ps`)
    typer.echo(f"OTLP receiver on http://{host}:{port}/v1/traces", err=True)
    code = run_together([dashboard, receiver], env)
    if code:
        raise typer.Exit(code)


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
    body_timeout: Annotated[
        float,
        typer.Option(help="Seconds a client has to send its whole body (408 after that)"),
    ] = 30.0,
    quiet_seconds: Annotated[
        float,
        typer.Option(
            help="Store a trace once it got no new span for this long "
            "(and every 2 s at least while it keeps growing)"
        ),
    ] = 0.2,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Processes that build and store traces (default: one for SQLite, else one per "
            "core)"
        ),
    ] = None,
) -> None:
    """Receive live traces over OTLP/HTTP (POST /v1/traces) and store them as they arrive."""
    from db.engine import display_url, resolve_url
    from ingest.otlp.receiver import ReceiverConfigError, ReceiverSettings, check_bind, serve
    from ingest.otlp.spool import default_spool_dir

    try:
        check_bind(host, token)
    except ReceiverConfigError as exc:
        raise _usage_error(str(exc)) from exc
    url = resolve_url(db)
    settings = ReceiverSettings(
        spool_dir=spool or default_spool_dir(url),
        token=token,
        max_body_bytes=int(max_body_mib * 1024 * 1024),
        body_timeout_seconds=body_timeout,
        quiet_seconds=quiet_seconds,
        store_workers=workers,
    )
    # An unreachable store fails before the banner.
    engine = _engine(url, create=True)
    typer.echo(
        f"ToolLens OTLP receiver on http://{host}:{port}/v1/traces "
        f"(database: {display_url(url)}, spool: {settings.spool_dir})",
        err=True,
    )
    serve(engine, settings, host=host, port=port)


@app.command("demo")
def demo_command(
    db: DbOption = None,
    out: Annotated[Path, typer.Option(help="Where to write the generated traces")] = Path(
        ".demo/traces"
    ),
    seed: Annotated[int, typer.Option(help="Scenario seed")] = 7,
    redact: RedactOption = "default",
    redact_rules: RedactRulesOption = None,
) -> None:
    """Generate the scenario traces (every situation ToolLens detects) and import them."""
    from ingest.importing.pipeline import import_paths
    from ingest.scenarios import generate

    redaction = _redaction(redact, redact_rules)
    engine = _engine(db, create=True)  # an unreachable store fails before writing traces
    generate(out, seed=seed)
    files = sorted(p for p in out.iterdir() if p.name != "ground_truth.json")
    summary = import_paths(engine, files, origin="demo", redaction=redaction)
    typer.echo(summary.line())


def main() -> None:
    """Entry point for ``python -m ingest.cli``."""
    app()


if __name__ == "__main__":
    main()
