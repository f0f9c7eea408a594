"""A handler's time, as its child reports it (worker/child.py:_call): its wall time less
its waits for a CPU (RunQueue), with the clock read outside the run queue's two readings,
so that a wait just before or after the handler never comes off the handler's own time."""

from __future__ import annotations

from typing import Any

import pytest

from taskyard.worker import child


class _Machine:
    """A clock and a run queue: a thread preempted for ``preempted`` seconds as it reads
    the run queue (its wall time and its wait both grow), and a handler that runs
    ``runs`` seconds."""

    def __init__(self, preempted: float, runs: float) -> None:
        self.now = 100.0
        self.waited = 5.0
        self.preempted = preempted
        self.runs = runs

    def clock(self) -> float:
        return self.now

    def queue(self) -> float:
        self.now += self.preempted
        self.waited += self.preempted
        return self.waited

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
