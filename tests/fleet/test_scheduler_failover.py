"""Two schedulers on one PostgreSQL (docs/operations/ha.md): the one in the middle of a
cycle, holding the cycle's lock, freezes (SIGSTOP: a paused VM, a process swapped out)
or dies (SIGKILL); the other carries on placing work within a worker's lease, nothing
restarted, and the frozen one carries on too once it thaws."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest
from tests.cycle_lock import frozen_mid_pipeline
from tests.fleet.daemons import Daemons
from tests.polling import wait_for

from taskyard.api.yard import Yard
from taskyard.store.postgresql.cycle import ADVISORY_KEY
from taskyard.store.postgresql.urls import pg_target

HANDED_OVER_WITHIN = 30.0
"""Seconds from the freeze to a job placed by the other scheduler: the workers' lease is
15 s; the server's own limit on a session idle in a transaction is a minute."""


@pytest.fixture
def pg(pg_url: str) -> str:
    return pg_url


def _holds_cycle_lock(url: str, name: str) -> bool:
    """Whether a backend of the daemon ``name`` (its PGAPPNAME) holds the cycle's lock."""
    with psycopg.connect(pg_target(url).libpq(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = %s "
            "AND (l.classid::bigint << 32 | l.objid::bigint) = %s",
            (name, ADVISORY_KEY)).fetchone()
    return row is not None and row[0] > 0


def _freeze_in_cycle(url: str, name: str, pid: int, deadline: float) -> None:
    """SIGSTOP the scheduler ``pid`` at a moment it holds the cycle's lock (it runs a
    cycle every 50 ms: stopped at random until one such moment is caught)."""
    while time.monotonic() < deadline:
        os.kill(pid, signal.SIGSTOP)
        if _holds_cycle_lock(url, name):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError(f"{name} never seen holding the cycle's lock")


def _placed_within(yard: Yard, job_id: int, seconds: float) -> float:
    """Seconds until the job left ``pending`` (placed by someone's cycle)."""
    start = time.monotonic()
    wait_for(f"job {job_id} placed", lambda: yard.get_job(job_id).state != "pending",
             timeout=seconds)
    return time.monotonic() - start


def test_a_scheduler_frozen_or_killed_holding_the_cycle_lock_hands_over(
        pg: str, tmp_path: Path) -> None:
    daemons = Daemons(tmp_path)
    yard = Yard(pg, inline_cycle=False)  # the daemons place what it submits
    try:
        yard.add_task_type("echo", "python:handlers_for_tests:echo")
        frozen = daemons.start("sched-a", "--db", pg, "scheduler", "--interval", "0.05")
        other = daemons.start("sched-b", "--db", pg, "scheduler", "--interval", "0.5")
        daemons.start("worker", "--db", pg, "worker", "--capacity", "2")
        wait_for("the worker", lambda: len(yard.workers()) == 1, timeout=120)
        first = yard.submit("echo", {"n": 0})
        assert yard.wait(first, 120).state == "succeeded", daemons.logs()

        _freeze_in_cycle(pg, "sched-a", frozen.pid, time.monotonic() + 120)
        job = yard.submit("echo", {"n": 1})
        took = _placed_within(yard, job, HANDED_OVER_WITHIN)
        assert yard.wait(job, 120).state == "succeeded"
        assert not _holds_cycle_lock(pg, "sched-a")  # the server ended its session
        os.kill(frozen.pid, signal.SIGCONT)

        # The other one dies in the middle of a cycle: its lock goes with its connection.
        os.kill(other.pid, signal.SIGKILL)
        other.wait(30)
        del daemons.procs["sched-b"]
        after_kill = yard.submit("echo", {"n": 2})
        assert yard.wait(after_kill, 120).state == "succeeded", daemons.logs()
        # The thawed scheduler places work again: it lost its connection, not its loop.
        wait_for("sched-a's cycles again", lambda: daemons.log("sched-a").count(
            "event=cycle-failed") >= 1, timeout=60)
        print(f"handed over after the freeze in {took:.1f} s")
        assert daemons.alive() == ["sched-a", "worker"]
    finally:
        for proc in daemons.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        codes = daemons.stop()
        yard.close()
    assert set(codes.values()) == {0}, daemons.logs()


def test_a_client_frozen_mid_pipeline_with_the_cycle_lock_is_cut_off(
        pg: str, tmp_path: Path) -> None:
    """A client frozen between a pipeline's statements and its Sync holding the lock (a
    placing submit of an API process stopped there) is not ended by the server's limits:
    the scheduler, finding the lock busy, ends its session and places again."""
    daemons = Daemons(tmp_path)
    yard = Yard(pg, inline_cycle=False)  # the daemons place what it submits
    try:
        yard.add_task_type("echo", "python:handlers_for_tests:echo")
        daemons.start("sched", "--db", pg, "scheduler", "--interval", "0.5")
        daemons.start("worker", "--db", pg, "worker", "--capacity", "2")
        wait_for("the worker", lambda: len(yard.workers()) == 1, timeout=120)
        first = yard.submit("echo", {"n": 0})
        assert yard.wait(first, 120).state == "succeeded", daemons.logs()

        with frozen_mid_pipeline(pg_target(pg).libpq()) as frozen:
            job = yard.submit("echo", {"n": 1})
            took = _placed_within(yard, job, HANDED_OVER_WITHIN)
            assert yard.wait(job, 120).state == "succeeded"
            pid = frozen.info.backend_pid
            assert f"event=frozen-holder-ended sessions={pid}" in daemons.log("sched"), \
                daemons.logs()
        print(f"placed {took:.1f} s after the submit, behind a frozen holder")
    finally:
        codes = daemons.stop()
        yard.close()
    assert set(codes.values()) == {0}, daemons.logs()
