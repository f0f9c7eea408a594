"""A handler's time, as its child reports it (worker/child.py:_call): its wall time less
its waits for a CPU (RunQueue), each run queue reading after a clock reading: a thread
preempted as a reading's system call returns resumes there, so the next reading holds
that wait — the first's falls inside the clock's span and comes off, the second's
outside it and neither counts."""

from __future__ import annotations

from typing import Any

import pytest

from taskyard.worker import child


class _Machine:
    """A clock and a run queue: a thread preempted for ``preempted`` seconds as it reads
    the run queue (its wall time and its wait both grow), before the reading or, with
    ``at_return``, after it (as its system call returns), and a handler that runs
    ``runs`` seconds."""

    def __init__(self, preempted: float, runs: float, at_return: bool = False) -> None:
        self.now = 100.0
        self.waited = 5.0
        self.preempted = preempted
        self.runs = runs
        self.at_return = at_return

    def clock(self) -> float:
        return self.now

    def queue(self) -> float:
        read = self.waited
        self.now += self.preempted
        self.waited += self.preempted
        return read if self.at_return else self.waited

    def handler(self) -> int:
        self.now += self.runs
        return 1


@pytest.mark.parametrize("preempted", [0.0, 0.004, 0.02])
def test_a_wait_for_a_cpu_around_the_handler_is_not_taken_off_its_time(
        monkeypatch: pytest.MonkeyPatch, preempted: float) -> None:
    machine = _Machine(preempted, runs=0.05)
    monkeypatch.setattr(child, "_queued", machine.queue)
    monkeypatch.setattr("taskyard.worker.child.time.perf_counter", machine.clock)
    cache: dict[str, Any] = {"m:handler": machine.handler}
    outcome = child._call(cache, {"target": "m:handler", "args": {}}, child.EventLoop())
    assert outcome["state"] == "succeeded"
    # Never less than the handler's run; at most the waits at its edges more (where the
    # run queue cannot tell them from the handler's: the pace before RunQueue existed).
    assert 0.05 - 1e-9 <= outcome["seconds"] <= 0.05 + 2 * preempted + 1e-9


@pytest.mark.parametrize("preempted", [0.004, 0.02])
def test_a_wait_as_a_reading_returns_never_counts(
        monkeypatch: pytest.MonkeyPatch, preempted: float) -> None:
    """Where a preempted thread mostly resumes: as a system call returns. A no-op handler
    makes none, so its wait came at the second reading's return; read before the clock,
    it counted whole (1 to 7 ms of one core's turn for a no-op, at 200 workers)."""
    machine = _Machine(preempted, runs=0.05, at_return=True)
    monkeypatch.setattr(child, "_queued", machine.queue)
    monkeypatch.setattr("taskyard.worker.child.time.perf_counter", machine.clock)
    outcome = child._call({"m:h": machine.handler}, {"target": "m:h", "args": {}},
                          child.EventLoop())
    assert outcome["seconds"] == pytest.approx(0.05)


def test_a_wait_during_the_handler_is_taken_off(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = _Machine(0.0, runs=0.05)

    def preempted_handler() -> int:
        machine.now += 0.03  # waited 30 ms for a CPU in the middle of its run
        machine.waited += 0.03
        return machine.handler()

    monkeypatch.setattr(child, "_queued", machine.queue)
    monkeypatch.setattr("taskyard.worker.child.time.perf_counter", machine.clock)
    outcome = child._call({"m:h": preempted_handler}, {"target": "m:h", "args": {}},
                          child.EventLoop())
    assert outcome["seconds"] == pytest.approx(0.05)


def test_a_handlers_first_run_in_the_child_is_marked_cold() -> None:
    """Its first run carries what it does once (resolving it, the first touches of its
    code, an async handler's event loop): the worker does not count it as a pace."""
    cache: dict[str, Any] = {}
    target = {"target": "tests.handlers_for_tests:echo", "args": {}}
    first = child._call(cache, target, child.EventLoop())
    second = child._call(cache, target, child.EventLoop())
    assert first["state"] == second["state"] == "succeeded"
    assert first.get("cold") is True and "cold" not in second
    assert "seconds" in first and "seconds" in second  # its time is still reported
