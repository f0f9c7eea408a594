# taskyard — one command each: `make demo`, `make ui`, `make test`, `make bench`.
VENV ?= .venv
PY := $(VENV)/bin/python
# The benchmarks' own environment: taskyard plus the peers (procrastinate, PgQueuer, huey,
# Celery); Airflow has a venv of its own (AIRFLOW_VENV).
BENCH_VENV ?= .venv-bench
# Airflow 2 (the W4 peer) needs SQLAlchemy 1.4: a venv of its own, pinned by
# bench/airflow-constraints.txt. Only `make bench` installs it, never `make test`.
AIRFLOW_VENV ?= .venv-airflow

# The browser tests drive Debian's chromium (Playwright's own browser download cannot
# work here): installed once, when missing.
CHROMIUM := /usr/bin/chromium
# The bridges' tests run real servers (docs/integrations/): RabbitMQ for the publisher,
# Redis as the Celery broker. Installed once, when missing; the harness starts throwaway
# ones on free ports (the packages' own services are not used).
RABBITMQ := /usr/sbin/rabbitmq-server
REDIS := /usr/bin/redis-server
UI_PORT ?= 8080

.PHONY: demo ui test lint bench clean

# Two stamps in one venv: `.runtime` is taskyard and what it needs to run (make demo,
# make ui); `.installed` adds the dev tools (make test, make lint). Either order works:
# `make demo` then `make test` adds the tools to the demo's venv, and `make test` on a
# fresh checkout creates the venv through `.runtime` first.
$(VENV)/.runtime: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e .
	touch $@

$(VENV)/.installed: $(VENV)/.runtime
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

$(BENCH_VENV)/.installed: pyproject.toml
	python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_VENV)/bin/pip install -q -e '.[bench]'
	touch $@

$(AIRFLOW_VENV)/.installed: bench/airflow-constraints.txt
	python3 -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/pip install -q --upgrade pip
	$(AIRFLOW_VENV)/bin/pip install -q -c bench/airflow-constraints.txt \
	  apache-airflow==2.11.2 psycopg2-binary
	touch $@

$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "make: install Debian's chromium for the browser tests" >&2; exit 1; }
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

$(RABBITMQ) $(REDIS):
	@command -v apt-get >/dev/null || { echo "make: install Debian's rabbitmq-server and redis-server for the bridge tests" >&2; exit 1; }
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server redis-server

demo: $(VENV)/.runtime
	$(PY) examples/demo/run_demo.py

# The dashboard on the demo's database (run `make demo` first, or it runs it): prints the
# URL and a token, then serves with 2 workers until Ctrl-C.
ui: $(VENV)/.runtime
	$(PY) examples/demo/ui.py --port $(UI_PORT)

# CI (.ci/run) runs this: lint first, so that a ruff or mypy error fails the run.
test: lint $(CHROMIUM) $(RABBITMQ) $(REDIS)
	VENV=$(abspath $(VENV)) scripts/run-tests

# taskyard vs procrastinate, PgQueuer, huey, Celery and Airflow: bench/results/latest.md and the plots.
bench: $(BENCH_VENV)/.installed $(AIRFLOW_VENV)/.installed
	BENCH_VENV=$(abspath $(BENCH_VENV)) AIRFLOW_VENV=$(abspath $(AIRFLOW_VENV)) scripts/bench

# ruff and mypy (strict, src/taskyard): any finding fails `make lint`, so `make test`.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(AIRFLOW_VENV) examples/demo/run .pytest_cache .mypy_cache .ruff_cache
