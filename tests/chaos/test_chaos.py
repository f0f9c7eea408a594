"""Chaos test (issue 5), on SQLite and on PostgreSQL: ≥ 2,000 jobs and graphs while
workers are SIGKILLed every 1-3 s, the scheduler is killed a few times and, on
PostgreSQL, the server restarts mid-run; judged from the database and from the log the
handlers append to (see chaos_driver.py and chaos_checks.py).

The summary is printed and, with ``TASKYARD_CHAOS_REPORT=PATH``, merged into the JSON
object at PATH under the store's name. The variants take turns (a file lock shared by the
xdist workers of one session) instead of competing for the machine's cores.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos_driver import PG_CLUSTER, Config, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def chaos_turn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One chaos run at a time in this pytest session (``--dist loadgroup`` would say
    so, but pytest-xdist's groups do not work with pytest 9's node ids)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with (shared / "chaos.lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@pytest.fixture
def own_pg_cluster() -> Iterator[tuple[str, Path]]:
    """A throwaway cluster of our own: the run restarts its server, which would break
    the tests running against the shared one."""
    if not (os.environ.get("PG_BIN") or glob.glob("/usr/lib/postgresql/*/bin/initdb")) \
            and os.environ.get("TASKYARD_REQUIRE_PG") != "1":
        pytest.skip("PostgreSQL binaries not found (set PG_BIN or run `make test`)")
    tmp = Path(tempfile.mkdtemp(prefix="taskyard-chaos-pg-"))
    if os.geteuid() == 0:
        tmp.chmod(0o755)  # the server runs as `postgres` and lives in here
    try:
        started = subprocess.run([str(PG_CLUSTER), "start", str(tmp / "pg")], check=True,
                                 capture_output=True, text=True, timeout=120)
        yield started.stdout.strip(), tmp / "pg"
    finally:
        subprocess.run([str(PG_CLUSTER), "stop", str(tmp / "pg")], check=False, timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)


def _report(summary: dict[str, object]) -> None:
    print(json.dumps(summary, indent=2))
    path = os.environ.get("TASKYARD_CHAOS_REPORT")
    if not path:
        return
    report = Path(path)
    try:
        merged = json.loads(report.read_text())
    except (OSError, ValueError):
        merged = {}
    if not isinstance(merged, dict):
        merged = {}
    merged[str(summary["store"])] = summary
    report.write_text(json.dumps(merged, indent=2) + "\n")


@pytest.mark.parametrize("backend", ["sqlite", "pg"])
@pytest.mark.usefixtures("chaos_turn")
def test_chaos(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pg_dir = None
    if backend == "pg":
        url, pg_dir = request.getfixturevalue("own_pg_cluster")
    else:
        url = f"sqlite:///{tmp_path / 'chaos.db'}"
    summary = run(Config(db=url, pg_dir=pg_dir, run_dir=tmp_path / "run"))
    _report(summary)
    violations = summary["violations"]
    assert isinstance(violations, list)
    assert summary["violation_count"] == 0, "\n".join(map(str, violations[:60]))
    # The run must have been what it claims: a check that saw no chaos proves nothing.
    assert summary["jobs"] >= 2000
    assert summary["graph_jobs"] >= 300
    assert summary["worker_kills"] >= 20
    assert summary["scheduler_kills"] >= 2
    assert summary["server_restarts"] == (1 if backend == "pg" else 0)
    assert summary["lost_attempts"] > 0 and summary["recovered_attempts"] > 0
    assert summary["lock_holds"] > 0
    assert summary["duplicate_completions_accepted"] == 0
