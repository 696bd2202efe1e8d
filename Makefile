# ToolLens — the two commands a fresh machine needs are `make demo` and `make test`.
# `make help` lists the targets. Its lines are single-quoted: inside double quotes the shell
# would run a `command` in backticks.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
DEMO_DB ?= .demo/toollens.db
PORT   ?= 8501

.PHONY: help venv demo serve test test-fast lint format bench bench-revision bench-startup bench-ui bench-ui-growth bench-browser-floor bench-pairs bench-otlp bench-reimport bench-search bench-clickhouse clean

help:
	@echo 'make demo       set up, import the sample traces into SQLite ($(DEMO_DB)), open the dashboard'
	@echo 'make serve      open the dashboard on the demo store again (PORT=$(PORT))'
	@echo 'make test       set up and run the whole test suite'
	@echo 'make test-fast  the tests without a browser or PostgreSQL (pytest -m "not browser and not pg")'
	@echo 'make lint       ruff check, ruff format --check, mypy on db/, ingest/ and dashboard/'
	@echo 'make format     ruff format and ruff check --fix'
	@echo 'make bench      import benchmark (SQLite and PostgreSQL)'
	@echo 'make bench-revision  import speed against an earlier revision (REV="commit ..."; default: before the rollups)'
	@echo 'make bench-startup   toollens summary start against the code before the Core tables (the 1M bench-ui stores)'
	@echo 'make bench-ui        dashboard speed benchmark (MESSAGES=1000000; DB=postgresql+psycopg://... for PostgreSQL)'
	@echo 'make bench-ui-growth page times at 1M, 3M and 10M messages, SQLite and PostgreSQL (PG_URL)'
	@echo 'make bench-browser-floor  Streamlit + Plotly alone in the browser (no data) vs a one-line page'
	@echo 'make bench-pairs     seconds of `toollens pairs` on the bench store (MESSAGES, DB)'
	@echo 'make bench-otlp      live OTLP ingest, ToolLens receiver vs Arize Phoenix (STEPS=3000)'
	@echo 'make bench-reimport  re-import speed (unchanged real data, one line appended)'
	@echo 'make bench-search    content search speed (1M-message store)'
	@echo 'make bench-clickhouse  import into SQLite, PostgreSQL and the ClickHouse cluster; the cluster'"'"'s store'
	@echo '                     grown to MESSAGES=10000000,30000000: summary, pairs, bytes (CH_URL, PG_URL)'
	@echo 'make clean      remove .demo, .bench and the tools caches'
	@echo ''
	@echo 'After make demo: . $(VENV)/bin/activate, then toollens --help, toollens summary --db $(DEMO_DB)'

$(BIN)/toollens: pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "ToolLens needs Python 3.11 or newer")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# pip's and setuptools' notices (deprecations, build warnings) go to a log, shown only
	@# when the install fails, so that `make test` starts with the test run's own header.
	@$(BIN)/python -m pip install --quiet --upgrade pip > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }
	@echo "installing ToolLens and its dev dependencies into $(VENV) (log: $(VENV)/pip.log)"
	@$(BIN)/python -m pip install --quiet -e '.[dev]' >> $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }
	touch $(BIN)/toollens

venv: $(BIN)/toollens

demo: venv
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(BIN)/toollens demo --db $(DEMO_DB)
	@if [ -d ../shared/realdata ]; then \
	  $(BIN)/toollens import --db $(DEMO_DB) ../shared/realdata/openai-chat/*.json \
	    ../shared/realdata/claude-code/*.jsonl ../shared/realdata/openai-legacy/*.json \
	    ../shared/realdata/langfuse-export/*.json; fi
	$(BIN)/toollens summary --db $(DEMO_DB)
	@echo ''
	@echo 'The demo store is $(DEMO_DB). In another terminal, from this folder:'
	@echo '  . $(VENV)/bin/activate    (puts toollens on the PATH of that shell)'
	@echo '  toollens summary --db $(DEMO_DB)'
	@echo '  toollens pairs --db $(DEMO_DB) --format csv > pairs.csv'
	@echo '  toollens import --db $(DEMO_DB) YOUR_TRACES.jsonl'
	@echo '  export TOOLLENS_DB=$(DEMO_DB)    (then --db can be left out)'
	@echo 'The dashboard starts now on http://127.0.0.1:$(PORT) (Ctrl-C stops it; make serve opens it again).'
	@echo ''
	$(BIN)/toollens serve --db $(DEMO_DB) --port $(PORT)

serve: venv
	$(BIN)/toollens serve --db $(DEMO_DB) --port $(PORT)

# Not -q: the header says which PostgreSQL, browser and real data the run used or skipped; the
# 20 slowest tests are listed at the end (where the suite's time goes, in CI's log too).
# Three workers on two cores: much of the time a worker waits (a served page, a subprocess, a
# database server), and a third worker fills it (four were slower: 17.8 min against 16.5).
test: venv
	$(BIN)/python -m pytest -n 3 --dist loadfile --durations=20

# The tests that need neither Chromium nor a PostgreSQL server (tests/conftest.py marks `pg`).
test-fast: venv
	$(BIN)/python -m pytest -n 3 --dist loadfile -m "not browser and not pg"

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy db ingest dashboard

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: venv
	$(BIN)/python -m benchmarks.ingest_bench

# The import against the code of REV (a git worktree under .bench/), alternating, SQLite and PG_URL.
BEFORE ?= 963c218~1
REV ?= $(BEFORE)
bench-revision: venv
	$(BIN)/python -m benchmarks.revision_bench $(foreach r,$(REV),--before '$(r)') --db sqlite --db '$(PG_URL)'

# `toollens summary` against the code before the schema's Core tables, on the bench-ui stores.
bench-startup: venv
	$(BIN)/python -m benchmarks.startup_bench --db .bench/ui-1m.db \
	  --db '$(PG_URL)?options=-csearch_path%3Dtoollens_bench_1m'

# The bench's own stores: .bench/ui-<size>.db, or the schema toollens_bench_<size> of DB's database.
MESSAGES ?= 1000000
DB ?= sqlite
PG_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
SIZES ?= 1000000,3000000,10000000
bench-ui: venv
	$(BIN)/python -m benchmarks.ui_bench --messages $(MESSAGES) --db '$(DB)' $(BENCH_UI_ARGS)
bench-ui-growth: venv
	$(BIN)/python -m benchmarks.ui_bench --sizes $(SIZES) --db sqlite --db '$(PG_URL)' --no-browser --pairs
bench-browser-floor: venv
	$(BIN)/python -m benchmarks.browser_floor

bench-pairs: venv
	$(BIN)/python -m benchmarks.ui_bench --pairs-only --messages $(MESSAGES) --db '$(DB)'

STEPS ?= 3000
bench-otlp: venv
	$(BIN)/python -m benchmarks.otlp_bench --steps $(STEPS)
bench-reimport: venv
	$(BIN)/python -m benchmarks.reimport_bench
bench-search: venv
	$(BIN)/python -m benchmarks.search_bench

# The loopback cluster of .ci/clickhouse-cluster; the store (database toollens_bench) is dropped
# at the end. MESSAGES given on the command line is the list of sizes; otherwise 10M and 30M.
CH_URL ?= clickhouse://default@127.0.0.1:19001,127.0.0.1:19002/toollens_bench?cluster=toollens
CH_SIZES = $(if $(filter command line,$(origin MESSAGES)),$(MESSAGES),10000000,30000000)
bench-clickhouse: venv
	$(BIN)/python -m benchmarks.clickhouse_bench --messages '$(CH_SIZES)' --clickhouse '$(CH_URL)' \
	  --pg-url '$(PG_URL)'

clean:
	rm -rf .demo .bench test-artifacts .pytest_cache .mypy_cache .ruff_cache
	@# make bench-revision's worktrees lived under .bench: forget them.
	git worktree prune 2>/dev/null || true
