# taskyard — one command each: `make demo`, `make test`, `make bench`.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/demo/run_demo.py

test: $(VENV)/.installed
	VENV=$(abspath $(VENV)) scripts/run-tests

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) examples/demo/run .pytest_cache .mypy_cache .ruff_cache
