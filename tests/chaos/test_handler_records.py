"""The handlers' log names the worker that ran each execution, even for a record
written after that worker was SIGKILLed: the guardian ends the dead worker's handlers
a moment later, and a handler may log in between (the chaos checks allow that, until
the guardian has exited). The moment is held open here by stopping the guardian."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import chaos_checks as checks
import pytest
from chaos_driver import HERE, _guardian_of, _running
from chaos_handlers import LOG_ENV

from taskyard.api.yard import Yard

pytestmark = pytest.mark.timeout(300)


def _until(what: str, ready: Callable[[], object], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:.0f} s"
        time.sleep(0.02)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@contextlib.contextmanager
def _daemons(url: str, env: dict[str, str], cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A scheduler and a one-slot worker (yielded), both ended on the way out."""
    base = [sys.executable, "-m", "taskyard", "--db", url]
    procs = [subprocess.Popen([*base, cmd, *args], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for cmd, args in (("scheduler", ["--interval", "0.2"]),
                               ("worker", ["--name", "w1", "--capacity", "1"]))]
    try:
        yield procs[1]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def test_a_record_written_after_the_worker_died_names_that_worker(tmp_path: Path) -> None:
    url, log = f"sqlite:///{tmp_path / 'records.db'}", tmp_path / "handlers.log"
    yard = Yard(url)
    yard.init()
    yard.add_task_type("outlive", "python:chaos_handlers:outlive")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]),
               **{LOG_ENV: str(log)})
    guardian: int | None = None
    try:
        with _daemons(url, env, tmp_path) as worker:
            _until("the worker's guardian", lambda: _guardian_of(worker.pid))
            guardian = _guardian_of(worker.pid)
            assert guardian is not None
            os.kill(guardian, signal.SIGSTOP)  # it cannot end the handler until resumed
            yard.submit("outlive")
            _until("the handler's start", lambda: _lines(log) >= 1)
            killed = time.time()
            worker.kill()
            worker.wait()
            reaped = time.time()
            _until("the handler's end, logged after its worker died", lambda: _lines(log) >= 2)
            os.kill(guardian, signal.SIGCONT)
            _until("the guardian's exit", lambda: not _running(guardian or 0))
            cleared = time.time()
        executions, problems = checks.parse_log(log)
        assert problems == []
        [ex] = executions
        assert (ex.wpid, ex.orphan) == (worker.pid, True)
        proc = checks.WorkerProc("w1", worker.pid, 1, 0.0, killed=killed, reaped=reaped,
                                 cleared=cleared)
        verdict = checks.Verdict()
        checks.settle_ends(executions, {worker.pid: proc}, {}, verdict)
        assert verdict.violations == []
    finally:
        yard.close()
        if guardian is not None and _running(guardian):
            os.kill(guardian, signal.SIGCONT)
