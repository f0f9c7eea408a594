# taskyard — one command each: `make demo`, `make test`, `make bench`.
VENV ?= .venv
PY := $(VENV)/bin/python
# The benchmarks' own environment: taskyard plus the peers (procrastinate, huey, Celery).
BENCH_VENV ?= .venv-bench

.PHONY: demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

$(BENCH_VENV)/.installed: pyproject.toml
	python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_VENV)/bin/pip install -q -e '.[bench]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo/run_demo.py

test: $(VENV)/.installed
	VENV=$(abspath $(VENV)) scripts/run-tests

# taskyard vs procrastinate, huey and Celery: bench/results/latest.md and the plots.
bench: $(BENCH_VENV)/.installed
	BENCH_VENV=$(abspath $(BENCH_VENV)) scripts/bench

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(BENCH_VENV) examples/demo/run .pytest_cache .mypy_cache .ruff_cache
