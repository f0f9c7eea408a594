"""What the CLI loads to start (issue 20, item 15): ``--version`` and ``--help`` load no
database stack, and a SQLite ``submit`` (no worker live) no PostgreSQL driver or dialect,
migrations, YAML, HTTP layer, daemons, scheduling cycle or aggregates it does not use.
The times themselves are measured by ``bench/cli_startup.py``, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import atexit, json, sys
def loaded():
    print(json.dumps(sorted(m for m in sys.modules if not m.startswith("_"))), file=sys.stderr)
atexit.register(loaded)
from taskyard.cli.main import main
main(sys.argv[1:])
"""


def _loaded(args: list[str], cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "TASKYARD_DB"}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stderr.splitlines()[-1]))


def _has(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["submit", "--help"]])
def test_version_and_help_load_no_database_stack(tmp_path: Path, args: list[str]) -> None:
    modules = _loaded(args, tmp_path)
    for heavy in ("sqlalchemy", "psycopg", "alembic", "yaml", "rich", "taskyard.store",
                  "taskyard.worker", "taskyard.scheduler", "taskyard.api.yard"):
        assert not _has(modules, heavy), heavy


def test_a_sqlite_submit_loads_only_what_it_uses(tmp_path: Path) -> None:
    for args in (["init"], ["task-type", "add", "t", "--handler", "shell:true"]):
        assert subprocess.run([sys.executable, "-m", "taskyard", *args], cwd=tmp_path,
                              capture_output=True, timeout=120, check=False).returncode == 0
    modules = _loaded(["submit", "t"], tmp_path)
    transitions = "taskyard.store.transitions."
    assert _has(modules, "sqlalchemy") and _has(modules, transitions + "jobs")  # it uses them
    for unused in ("psycopg", "sqlalchemy.dialects.postgresql", "alembic", "yaml", "rich",
                   "fastapi", "pydantic", "starlette", "taskyard.api.http", "taskyard.sim",
                   "taskyard.worker", "taskyard.bridges", "taskyard.cli.graph_files",
                   # No live worker: no inline cycle, so none of its code (issue 20).
                   "taskyard.scheduler", transitions + "cycle", "taskyard.core.placement",
                   # Aggregates are imported when a transaction first uses them.
                   *(transitions + name for name in ("graphs", "attempts", "workers",
                                                     "schedules", "retries", "stages")),
                   "taskyard.store.schema.migrate", "taskyard.model.schedules"):
        assert not _has(modules, unused), unused
