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
# The fleet tests run taskyard behind Debian's pgbouncer (tests/fleet/): installed once, when
# missing; the harness starts throwaway ones on free ports (the package's service is not used).
PGBOUNCER := /usr/sbin/pgbouncer
UI_PORT ?= 8080

.PHONY: demo ui test lint gate servers bench clean

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

# The servers the tests run (above), as Debian packages: whichever are missing, in one
# `apt-get update` and one install.
SERVER_PACKAGES := $(CHROMIUM):chromium $(RABBITMQ):rabbitmq-server $(REDIS):redis-server \
  $(PGBOUNCER):pgbouncer

servers:
	@missing=""; for pair in $(SERVER_PACKAGES); do \
	  [ -x "$${pair%%:*}" ] || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  command -v apt-get >/dev/null || { echo "make: install Debian's$$missing for the tests" >&2; exit 1; }; \
	  echo "apt-get install$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

demo: $(VENV)/.runtime
	$(PY) examples/demo/run_demo.py

# The dashboard on the demo's database (run `make demo` first, or it runs it): prints the
# URL and a token, then serves with 2 workers until Ctrl-C.
ui: $(VENV)/.runtime
	$(PY) examples/demo/ui.py --port $(UI_PORT)

# CI (.ci/run) runs this. The lint and the gate come before the suite, so that a ruff or
# mypy error or a branch of core left uncovered fails the run at once. The servers'
# install (network and disk) runs beside the venv's, the lint and the gate (CPU), each
# one's output printed whole when it ends; any of them failing stops the run before the
# suite.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target lint gate servers
	VENV=$(abspath $(VENV)) GATE=0 scripts/run-tests

# 100 % branch coverage of src/taskyard/core by the unit tests (scripts/core-gate).
gate: $(VENV)/.installed
	VENV=$(abspath $(VENV)) scripts/core-gate

# taskyard vs procrastinate, PgQueuer, huey, Celery and Airflow: bench/results/latest.md and the plots.
bench: $(BENCH_VENV)/.installed $(AIRFLOW_VENV)/.installed
	BENCH_VENV=$(abspath $(BENCH_VENV)) AIRFLOW_VENV=$(abspath $(AIRFLOW_VENV)) scripts/bench

# ruff and mypy (strict, src/taskyard): any finding fails `make lint`, so `make test`.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(AIRFLOW_VENV) examples/demo/run .pytest_cache .mypy_cache .ruff_cache
