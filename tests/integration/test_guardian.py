"""A worker killed with SIGKILL leaves no handler running: its guardian ends the process
groups of its Python children and shell commands (background jobs included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.outage import alive

from conftest import Cluster


def test_handlers_die_with_a_killed_worker(cluster: Cluster, tmp_path: Path) -> None:
    y = cluster.yard
    sh_pid, py_pid = tmp_path / "sh.pid", tmp_path / "py.pid"
    y.add_task_type("sh", f"shell:sleep 120 & echo $! > {sh_pid}; wait")
    y.add_task_type("py", "python:handlers_for_tests:pid_then_sleep")
    y.submit("sh")
    y.submit("py", {"path": str(py_pid), "seconds": 120})
    cluster.add_scheduler(interval=0.2)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    worker = subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", cluster.url, "worker", "--name", "doomed",
         "--capacity", "2"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not all(p.exists() and p.read_text().strip() for p in (sh_pid, py_pid)):
            assert time.monotonic() < deadline, "the jobs never started"
            time.sleep(0.05)
        pids = [int(p.read_text()) for p in (sh_pid, py_pid)]
        assert all(alive(pid) for pid in pids)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in pids):
            assert time.monotonic() < deadline, "a handler outlived its worker"
            time.sleep(0.02)
    finally:
        if worker.poll() is None:
            worker.kill()


def test_the_guardian_kills_a_child_that_does_not_lead_its_group_yet(tmp_path: Path) -> None:
    """Python children used to call setsid() only once their interpreter had started; a
    worker killed before that left the child running (killpg found no such group), and
    it then ran the job already waiting in its pipe, unowned (found by the chaos test).
    They now start in a session of their own, and the guardian still kills the leader
    itself first."""
    from taskyard.worker.guardian import Guardian

    ran = tmp_path / "ran"
    # Would lead its own group only once told to (never), as a child still starting up.
    child = subprocess.Popen(
        [sys.executable, "-c", "import os, sys, time; sys.stdin.readline(); os.setsid(); "
         "open(sys.argv[1], 'w').close(); time.sleep(60)", str(ran)], stdin=subprocess.PIPE)
    guardian = Guardian()
    try:
        guardian.watch(child.pid)
        guardian.close()  # the worker's end of the pipe closes, as when it is killed
        assert child.wait(10) == -signal.SIGKILL
        assert not ran.exists()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stdin is not None
        child.stdin.close()


def test_the_guardian_spares_a_group_it_no_longer_watches() -> None:
    """Watched twice, unwatched once, a group is no longer watched (its number may be
    another process's by the time the worker dies); the others die."""
    from taskyard.worker.guardian import Guardian

    spared, doomed = (subprocess.Popen(["sleep", "120"], start_new_session=True)
                      for _ in range(2))
    guardian = Guardian()
    try:
        guardian.watch(spared.pid)
        guardian.watch(doomed.pid)
        guardian.watch(spared.pid)
        guardian.unwatch(spared.pid)
        guardian.close()
        assert doomed.wait(10) == -signal.SIGKILL
        assert spared.poll() is None
    finally:
        for proc in (spared, doomed):
            proc.kill()
            proc.wait()


_DIES_BEFORE_WATCHING = """
import os, signal, sys
from taskyard.worker.guardian import Guardian
from taskyard.worker.processes import run_shell

class DiesBeforeWatching(Guardian):
    def watch(self, pgid):  # the worker is SIGKILLed right after starting the shell
        with open(sys.argv[1], "w") as fh:
            fh.write(str(pgid))
        os.kill(os.getpid(), signal.SIGKILL)

run_shell("touch " + sys.argv[2], {}, {}, deadline=None, stop_requested=lambda: False,
          grace=lambda: 1.0, tail=100, guardian=DiesBeforeWatching())
"""


def test_a_shell_handler_does_not_run_unwatched(tmp_path: Path) -> None:
    """A worker killed after starting a shell but before its guardian watched it used to
    leave the command running, unowned (found by the chaos test): the command now waits
    for the worker's go-ahead, given once it is watched."""
    pidfile, ran = tmp_path / "sh.pid", tmp_path / "ran"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    worker = subprocess.run([sys.executable, "-c", _DIES_BEFORE_WATCHING, str(pidfile),
                             str(ran)], env=env, timeout=30, check=False)
    assert worker.returncode == -signal.SIGKILL
    shell = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while alive(shell):
        assert time.monotonic() < deadline, "the shell neither ran nor exited"
        time.sleep(0.02)
    assert not ran.exists()


# A worker in miniature: one Python child, watched by a guardian, runs a pipeline of two
# jobs (the first starts a process of its own and sleeps; the second touches argv[2]);
# the "worker" SIGKILLs itself at the point argv[3] names.
_PYTHON_WORKER = """
import os, signal, sys, time
from taskyard.worker.guardian import Guardian
from taskyard.worker.processes import PythonChild

pids, ran, point = sys.argv[1:4]

class DiesBeforeWatching(Guardian):
    def watch(self, pgid):
        with open(pids, "w") as fh:
            fh.write(str(pgid))
        os.kill(os.getpid(), signal.SIGKILL)

child = PythonChild(DiesBeforeWatching() if point == "before-watch" else Guardian())
job = {"env": {}, "tail": 100, "job_id": 1, "attempt": 1, "stages": {}}
child.send_pipeline([
    {**job, "target": "handlers_for_tests:starts_then_sleeps",
     "args": {"path": pids, "seconds": 120}},
    {**job, "target": "pathlib:Path.touch", "args": {"self": ran}}])
while not os.path.exists(pids):
    time.sleep(0.01)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("point", ["before-watch", "mid-handler"])
def test_a_python_child_dies_with_its_worker(tmp_path: Path, point: str) -> None:
    """SIGKILLed before its guardian watched the child, the worker leaves a child that
    ends by itself (its pipe closed) without running a job; SIGKILLed while a handler
    runs, the guardian ends the child and what the handler started, and the pipeline's
    next job never runs."""
    pids, ran = tmp_path / "pids", tmp_path / "ran"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    worker = subprocess.run([sys.executable, "-c", _PYTHON_WORKER, str(pids), str(ran), point],
                            env=env, timeout=60, check=False)
    assert worker.returncode == -signal.SIGKILL
    left = [int(pid) for pid in pids.read_text().split()]
    assert len(left) == (1 if point == "before-watch" else 2)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in left):
        assert time.monotonic() < deadline, f"{left} outlived their worker"
        time.sleep(0.02)
    assert not ran.exists()
