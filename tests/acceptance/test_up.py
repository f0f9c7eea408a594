"""``taskyard up`` keeps its workers: one that dies is restarted (with a backoff when it
keeps dying at once), and SIGTERM still stops everything cleanly."""

from __future__ import annotations

import itertools
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

from acceptance_cli import Cli

from polling import wait_for
from taskyard.cli.supervise import WorkerSupervisor
from taskyard.model.records import WorkerRecord
from taskyard.store import open_store


def test_up_restarts_a_killed_worker_and_stops_on_sigterm(cli: Cli, db_url: str) -> None:
    store = open_store(db_url)
    up = cli.popen("up", "--workers", "1")
    try:
        def live() -> list[WorkerRecord]:
            assert up.poll() is None, up.communicate()
            return [w for w in store.workers.list() if w.state == "active"]

        (first,) = wait_for("the first worker", live)
        assert first.pid is not None
        # SIGKILL: the worker cannot say goodbye; `up` sees its process end.
        subprocess.run(["kill", "-KILL", str(first.pid)], check=True)
        replacement = wait_for("a restarted worker",
                                lambda: [w for w in live() if w.pid != first.pid])
        # `up` released the dead worker at once: the new one has its name, and runs jobs
        # (none waits on the dead one's lease).
        assert replacement[0].name == first.name
        cli("task-type", "add", "hello", "--handler", "shell:echo hi").ok()
        job_id = int(cli("submit", "hello", "--pool", "default").ok().out)
        wait_for("the job to succeed",
                 lambda: store.jobs.get(job_id).state == "succeeded",  # type: ignore[union-attr]
                 timeout=90)
        up.send_signal(signal.SIGTERM)
        _, err = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
            up.communicate()
        store.close()
    assert up.returncode == 0, err
    assert "event=worker-exited" in err and "code=-9" in err
    assert "event=worker-released" in err and "event=worker-restarted" in err
    assert "Traceback" not in err
    # Stopped cleanly: no worker left registered as active.
    check = open_store(db_url)
    try:
        assert check.workers.list() == []
    finally:
        check.close()


class _Exited:
    """A stand-in for a worker process that has already exited with ``code``."""

    pid = 4242

    def __init__(self, code: int) -> None:
        self.returncode = code

    def poll(self) -> int:
        return self.returncode


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_worker_that_dies_at_once_is_restarted_with_a_growing_delay() -> None:
    clock = _Clock()
    spawned: list[float] = []

    def spawn(cmd: Sequence[str]) -> Any:
        spawned.append(clock.now)
        return _Exited(3)

    supervisor = WorkerSupervisor({"w1": ["worker"]}, first_delay=1.0, max_delay=8.0,
                                  steady=30.0, spawn=spawn, clock=clock)
    supervisor.start()
    for _ in range(600):  # one simulated minute, polled every 0.1 s as `up` does
        clock.now += 0.1
        supervisor.poll()
    # Each gap is the delay plus the poll that noticed the exit (0.1 s).
    gaps = [round(b - a) for a, b in itertools.pairwise(spawned)]
    # 1, 2, 4, then capped at 8 seconds: 10 starts in a minute, not 600.
    assert gaps[:4] == [1, 2, 4, 8]
    assert set(gaps[3:]) == {8}
    assert len(spawned) == 10


def test_a_worker_that_ran_steadily_gets_the_short_delay_back() -> None:
    clock = _Clock()
    lives = iter([0.0, 0.0, 0.0, 60.0, 0.0])  # how long each start lives
    procs: list[tuple[float, _Running]] = []

    class _Running(_Exited):
        def __init__(self, until: float) -> None:
            super().__init__(1)
            self.until = until

        def poll(self) -> int | None:  # type: ignore[override]
            return self.returncode if clock.now >= self.until else None

    def spawn(cmd: Sequence[str]) -> Any:
        proc = _Running(clock.now + next(lives))
        procs.append((clock.now, proc))
        return proc

    supervisor = WorkerSupervisor({"w1": ["worker"]}, first_delay=1.0, max_delay=60.0,
                                  steady=30.0, spawn=spawn, clock=clock)
    supervisor.start()
    while len(procs) < 5:
        clock.now += 0.1
        supervisor.poll()
    starts = [start for start, _ in procs]
    gaps = [round(b - a) for a, b in itertools.pairwise(starts)]
    # Quick deaths: 1, 2, 4 s; then it lived 60 s and died: restarted after 1 s again.
    assert gaps == [1, 2, 4, 61]


def test_stop_does_not_restart() -> None:
    clock = _Clock()
    spawned: list[float] = []

    def spawn(cmd: Sequence[str]) -> Any:
        spawned.append(clock.now)
        return _Exited(0)

    supervisor = WorkerSupervisor({"w1": ["worker"], "w2": ["worker"]}, spawn=spawn,
                                  clock=clock)
    supervisor.start()
    assert supervisor.stop(grace=1) == []  # both had exited already: nothing to signal
    for _ in range(100):
        clock.now += 1
        supervisor.poll()
    assert len(spawned) == 2
