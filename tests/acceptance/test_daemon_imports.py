"""What a running worker and its Python child load (issue 23, memory): a child that has
served a no-op job holds no typing, inspect, tempfile, dataclasses, traceback, json,
asyncio or pickle module (each costs every child memory), and a worker none of the
Python API or of what only ``up`` uses, and on PostgreSQL no sqlite3. Memory itself is
measured by bench/, not here."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from acceptance_cli import Cli

# The probe handler imports nothing: what it reports is what the child itself loaded.
PROBE_HANDLERS = '''
import sys


def noop():
    return None


def modules(out):
    with open(out, "w") as fh:
        fh.write("\\n".join(sorted(sys.modules)))
'''

# The worker, which writes the modules it holds when it exits (SIGTERM stops it cleanly).
WORKER = """
import atexit, json, sys
def loaded():
    with open(sys.argv[1], "w") as fh:
        json.dump(sorted(sys.modules), fh)
atexit.register(loaded)
from taskyard.cli.main import main
main(sys.argv[2:])
"""

CHILD_NEVER = ("typing", "inspect", "tempfile", "dataclasses", "traceback", "json",
               "asyncio", "pickle", "re", "importlib", "struct", "multiprocessing",
               "taskyard.core", "sqlalchemy")
WORKER_NEVER = ("taskyard.api.yard", "taskyard.api.graph_builder", "taskyard.api.tasks",
                "taskyard.cli.serve", "taskyard.cli.supervise", "taskyard.core.idle")


def _has(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_a_worker_and_its_child_load_only_what_a_no_op_job_needs(cli: Cli) -> None:
    (cli.cwd / "mem_probe.py").write_text(PROBE_HANDLERS)
    cli("init").ok()
    for name in ("noop", "modules"):
        cli("task-type", "add", name, "--handler", f"python:mem_probe:{name}").ok()
    dump = cli.cwd / "worker.modules"
    # One slot: the probe runs in the child that ran the no-op job.
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(dump), "--db", cli.url, "worker", "--name", "w",
         "--capacity", "1"], cwd=cli.cwd, env=cli.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # On PostgreSQL a lone worker places no job: the scheduler does.
    scheduler = cli.popen("scheduler")
    out = cli.cwd / "child.modules"
    try:
        ran = [cli("submit", "noop", "--wait", timeout=120),
               cli("submit", "modules", "--args", json.dumps({"out": str(out)}), "--wait",
                   timeout=120)]
    finally:
        for proc in (worker, scheduler):
            proc.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=120)
        scheduler.communicate(timeout=120)
    assert all(r.code == 0 for r in ran), (ran, err)
    assert worker.returncode == 0, err
    child = set(out.read_text().split("\n"))
    assert "taskyard.worker.child" in child and "mem_probe" in child  # it is the child
    for name in CHILD_NEVER:
        assert not _has(child, name), name
    held = set(json.loads(dump.read_text()))
    assert _has(held, "taskyard.worker.daemon") and _has(held, "sqlalchemy")  # it is a worker
    for name in WORKER_NEVER:
        assert not _has(held, name), name
    if cli.url.startswith("postgresql"):
        assert not _has(held, "sqlite3")  # ~0.9 MiB in each daemon, never used there
