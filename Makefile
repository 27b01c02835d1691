# memcurator: `make demo` runs the main job on a generated fleet; `make test` runs the tests.
# Every target sets up .venv from the lock file first, so a fresh machine needs Python 3.11 and make.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
export MEMCURATOR_HOME ?= $(CURDIR)/.memcurator
export DAGSTER_HOME ?= $(MEMCURATOR_HOME)/dagster

.PHONY: setup demo test test-crash fuzz test-shared test-ui test-scaleout browser redis eval ui sql bench bench-10m clean lock crash

setup: $(VENV)/.installed

# Bytecode is compiled at setup (uv compiles the packages it installs): where PYTHONDONTWRITEBYTECODE is set,
# as on this project's machines, every process otherwise compiled dagster, pandas and the rest from source
# on import (import dagster, pandas, polars, duckdb: 4.5 s -> 2.1 s), and each night's process paid it.
$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode -r requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	$(BIN)/python -m compileall -q memcurator pipelines assets checks >/dev/null
	touch $@

## Generate the seeded demo fleet, land it, run the nightly job, print a summary.
demo: setup
	$(BIN)/memcurator demo

## The test suite that needs nothing outside the repository, on every core (pytest-xdist: on two cores
## 9 min 48 s against 13 min 17 s in one process; the tests share no file or port). The kill -9 tests
## run apart (`make test-crash`, in CI too): with them the suite took 9 min 14 s of its 10 minutes.
test: setup
	$(BIN)/pytest -m "not shared_data and not ui and not scaleout and not crash" -q -n auto

## The nightly run killed with SIGKILL on a first night and on a third: the store opens, the published
## snapshot is a whole night's, the rerun converges (`make crash` kills twenty of each).
test-crash: setup
	$(BIN)/pytest -m crash -q -n 2

## The property tests drawing new examples, 2,000 each (`make test` replays the same 60 on every run).
fuzz: setup
	$(BIN)/pytest tests/unit/test_hostile_input.py tests/unit/test_ranking.py tests/unit/test_importers.py -q --hypothesis-profile=fuzz

## Tests on the real external files in ../shared/data.
test-shared: setup
	$(BIN)/pytest -m shared_data -q

## The Dagster UI in headless Chromium (lineage and check results; screenshots in reports/ui/).
test-ui: setup browser
	$(BIN)/pytest -m ui -q

## The sharded night on real components: redis-server, moto_server (S3), two dagster-celery workers.
test-scaleout: setup redis
	$(BIN)/pytest -m scaleout -q

## Debian's redis-server for the scale-out test (apt-get; as root or through sudo).
redis:
	@command -v redis-server >/dev/null || \
		{ if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server; \
		  else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server; fi; }

## Debian's chromium for the browser test (apt-get; as root or through sudo).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }

## Dagster UI on http://127.0.0.1:3000 (schedule and sensors on by default).
ui: setup
	$(BIN)/memcurator init
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

## SQL shell on the published (read-only) snapshot of the store.
sql: setup
	$(BIN)/duckdb -readonly $(MEMCURATOR_HOME)/published/store.duckdb

## Re-pin requirements.lock from requirements.in.
lock: setup
	$(BIN)/uv pip compile requirements.in -o requirements.lock --python-version 3.11

clean:
	rm -rf $(VENV) .pytest_cache

## Every evaluation on ../shared/data: JSON in reports/eval, docs/evaluation.md, floors enforced.
eval: setup
	$(BIN)/memcurator eval-suite --data ../shared/data --out-dir reports/eval --report docs/evaluation.md

## kill -9 the nightly run 20 times at random moments on a first night, 20 times on the third night
## (incremental, its publish a delta); every store must open and converge, every snapshot be whole.
crash: setup
	$(BIN)/memcurator crash-test --kills 20 --out reports/crash.json
	$(BIN)/memcurator crash-test --kills 20 --after-nights 2 --workdir reports/crash-later --out reports/crash-later.json

## Benchmarks (not timed tests): 10k and 100k entries with eight churn nights one after the other (the
## target is read on the first; the report gives each), medians of BENCH_REPEAT runs,
## recall latency on a 50k-entry namespace; BENCH_SIZES="10000 100000 1000000" adds the million.
## Each run's file is kept in docs/bench/ (a size measured again replaces its file); then the ingest of the
## same events landed in a few files and in many small ones; docs/performance.md is written from all of them.
BENCH_SIZES ?= 10000 100000
BENCH_REPEAT ?= 3
bench: setup
	for n in $(BENCH_SIZES); do \
		$(BIN)/memcurator bench --entries $$n --namespaces $$((n / 100)) --churn 0.01 --churn-nights 8 --repeat $(BENCH_REPEAT) \
			$$( [ $$n = 100000 ] && echo --recall-entries 50000 ) $$( [ $$n = 1000000 ] && echo --job-night ) \
			--out docs/bench/bench-$$n.json || exit 1; \
	done
	$(BIN)/memcurator bench-ingest --out docs/bench/ingest-files.json
	$(BIN)/memcurator bench-report docs/bench/bench-*.json --ingest docs/bench/ingest-files.json

## The documented 10M run (not in CI; about an hour and 20 GB of scratch space): one run, then the report
## again from every size measured so far (the targets stay read at 1M entries).
bench-10m: setup
	$(BIN)/memcurator bench --entries 10000000 --namespaces 100000 --churn 0.01 --out docs/bench/bench-10000000.json
	$(BIN)/memcurator bench-report docs/bench/bench-*.json $$( [ -f docs/bench/ingest-files.json ] && echo --ingest docs/bench/ingest-files.json )
