"""The executor's local queue (jobs placed on a worker beyond what runs at once)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from taskyard.model.records import ClaimedJob, Outcome
from taskyard.worker.process_executor import ProcessExecutor
from taskyard.worker.processes import PythonChild


def test_queued_jobs_start_by_priority_then_age() -> None:
    ended: list[Outcome] = []
    done = threading.Event()

    def on_done(outcome: Outcome, _seconds: float) -> None:
        ended.append(outcome)
        if len(ended) == 5:
            done.set()

    executor = ProcessExecutor(1, on_done=on_done, prewarm=False, guard=False)
    try:
        def job(job_id: int, priority: int, command: str = "true") -> ClaimedJob:
            return ClaimedJob(job_id, 1, "t", f"shell:{command}", {}, None, priority=priority)

        # The first occupies the only slot; then come three low-priority jobs, and an
        # urgent one placed last: it starts next.
        executor.submit([job(1, 0, "sleep 0.3")])
        deadline = time.monotonic() + 10
        while not executor.take_started():
            assert time.monotonic() < deadline
            time.sleep(0.005)
        executor.submit([job(2, 0), job(3, 0), job(4, 0)])
        executor.submit([job(5, 9)])
        assert done.wait(30)
        order = [o.job_id for o in ended]
        assert order == [1, 5, 2, 3, 4]
        assert all(o.state == "succeeded" for o in ended)
    finally:
        executor.shutdown()


def _python_job(job_id: int, handler: str = "echo") -> ClaimedJob:
    return ClaimedJob(job_id, 1, "t", f"python:tests.handlers_for_tests:{handler}", {}, None)


class _Recorder:
    """Outcomes, and at each end the starts seen so far: never more started and not
    ended than the capacity (what the worker's reports show the database)."""

    def __init__(self, capacity: int, expected: int) -> None:
        self.capacity = capacity
        self.expected = expected
        self.executor: ProcessExecutor | None = None
        self.started: list[tuple[int, int]] = []
        self.ended: list[Outcome] = []
        self.most_running = 0
        self.done = threading.Event()

    def on_done(self, outcome: Outcome, _seconds: float) -> None:
        assert self.executor is not None
        self.started += [(j, a) for j, a, _ in self.executor.take_started()]
        assert (outcome.job_id, outcome.attempt) in self.started
        self.most_running = max(self.most_running, len(self.started) - len(self.ended))
        self.ended.append(outcome)
        if len(self.ended) >= self.expected:
            self.done.set()


def _pipelined(monkeypatch: pytest.MonkeyPatch, capacity: int, expected: int
               ) -> tuple[ProcessExecutor, _Recorder, list[int]]:
    """An executor that pipelines whatever it can (a wide window), and the sizes of the
    messages its children receive."""
    sizes: list[int] = []
    send = PythonChild.send_pipeline

    def counting(self: PythonChild, msgs: list[dict[str, object]]) -> None:
        sizes.append(len(msgs))
        send(self, msgs)

    monkeypatch.setattr(PythonChild, "send_pipeline", counting)
    recorder = _Recorder(capacity, expected)
    executor = ProcessExecutor(capacity, on_done=recorder.on_done, pipeline_window=60.0)
    recorder.executor = executor
    return executor, recorder, sizes


def test_short_python_jobs_run_in_pipelines(monkeypatch: pytest.MonkeyPatch) -> None:
    executor, recorder, sizes = _pipelined(monkeypatch, 2, 1 + 60)
    try:
        executor.submit([_python_job(0)])  # once a duration is known, pipelines form
        executor.submit([_python_job(i) for i in range(1, 61)])
        assert recorder.done.wait(60)
        assert sorted(o.job_id for o in recorder.ended) == list(range(61))
        assert all(o.state == "succeeded" for o in recorder.ended)
        # Each ran as itself (its own environment), started once, within the capacity.
        assert all(o.result["job_id"] == str(o.job_id) for o in recorder.ended)  # type: ignore[index]
        assert sorted(recorder.started) == [(i, 1) for i in range(61)]
        assert recorder.most_running <= 2
        assert max(sizes) > 1 and sum(sizes) == 61
        assert executor.queued() == 0
    finally:
        executor.shutdown()


def _warm_up(executor: ProcessExecutor, recorder: _Recorder) -> float:
    """Run job 0 so that the slot's child is up and the pace is known; returns a deadline
    (monotonic) for the rest of the test."""
    executor.submit([_python_job(0)])
    deadline = time.monotonic() + 30
    while not recorder.ended:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return deadline


def test_a_child_dying_in_a_pipeline_loses_only_its_own_job(
        monkeypatch: pytest.MonkeyPatch) -> None:
    executor, recorder, sizes = _pipelined(monkeypatch, 1, 1 + 12)
    try:
        _warm_up(executor, recorder)
        # One pipeline: the child dies at the fourth job; the eight behind it never
        # started there, and run in a new child.
        executor.submit([_python_job(i) for i in range(1, 4)] + [_python_job(4, "die")]
                        + [_python_job(i) for i in range(5, 13)])
        assert recorder.done.wait(60)
        states = {o.job_id: o.state for o in recorder.ended}
        assert len(recorder.ended) == 13 and len(states) == 13
        assert states.pop(4) == "error"
        assert set(states.values()) == {"succeeded"}
        assert sizes[1] == 12  # the second message held the whole pipeline
        assert sorted(recorder.started) == [(i, 1) for i in range(13)]
        assert recorder.most_running <= 1
    finally:
        executor.shutdown()


def test_a_job_stopped_in_a_pipeline_never_runs_to_success(
        monkeypatch: pytest.MonkeyPatch) -> None:
    executor, recorder, sizes = _pipelined(monkeypatch, 1, 1 + 7)
    try:
        deadline = _warm_up(executor, recorder)
        slow = ClaimedJob(1, 1, "t", "python:tests.handlers_for_tests:sleepy",
                          {"seconds": 0.5}, None)
        executor.submit([slow] + [_python_job(i) for i in range(2, 8)])
        while executor.queued() != 6:  # the slot took them: slow runs, 6 behind it
            assert time.monotonic() < deadline
            time.sleep(0.001)
        executor.stop(2, 1)  # the child starts it as the slow one ends: stopped at once
        assert recorder.done.wait(60)
        assert sizes[1] == 7
        states = {o.job_id: o.state for o in recorder.ended}
        assert states[2] == "canceled"
        assert all(states[i] == "succeeded" for i in (0, 1, 3, 4, 5, 6, 7))
        assert recorder.most_running <= 1
    finally:
        executor.shutdown()


def test_a_python_job_counts_its_handlers_own_time_not_the_round_trip(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The pace a worker sizes its prefetch window and pipelines from: a no-op job whose
    outcome reaches the slot 0.3 s late (a loaded machine's round trip to the child)
    still took its handler's own time."""
    wait = PythonChild.wait

    def late(self: PythonChild, *args: object, **kwargs: object) -> dict[str, object]:
        outcome = wait(self, *args, **kwargs)  # type: ignore[arg-type]
        time.sleep(0.3)
        return outcome

    monkeypatch.setattr(PythonChild, "wait", late)
    took: list[float] = []
    done = threading.Event()

    def on_done(outcome: Outcome, seconds: float) -> None:
        assert outcome.state == "succeeded"
        took.append(seconds)
        done.set()

    executor = ProcessExecutor(1, on_done=on_done, prewarm=False, guard=False)
    try:
        started = time.monotonic()
        executor.submit([_python_job(1)])
        assert done.wait(60)
        assert time.monotonic() - started >= 0.3
        assert 0 <= took[0] < 0.3
    finally:
        executor.shutdown()


def _run_one(job: ClaimedJob) -> tuple[Outcome, float]:
    ended: list[tuple[Outcome, float]] = []
    done = threading.Event()

    def on_done(outcome: Outcome, seconds: float) -> None:
        ended.append((outcome, seconds))
        done.set()

    executor = ProcessExecutor(1, on_done=on_done, prewarm=False, guard=False)
    try:
        executor.submit([job])
        assert done.wait(120)
    finally:
        executor.shutdown()
    return ended[0]


@pytest.mark.skipif(not os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat"),
                    reason="the run queue's wait is read from Linux's schedstat")
def test_a_handler_preempted_on_a_busy_machine_reports_the_time_it_ran() -> None:
    """The pace (core.prefetch) leaves out the time the child waited for a CPU: two
    processes spinning on the handler's only CPU triple its wall time, not its pace."""
    cpu = max(os.sched_getaffinity(0))
    hog = (f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nprint('spinning', flush=True)\n"
           "while True:\n    pass\n")
    hogs = [subprocess.Popen([sys.executable, "-c", hog], stdout=subprocess.PIPE)
            for _ in range(2)]
    try:
        for proc in hogs:
            assert proc.stdout is not None and proc.stdout.readline() == b"spinning\n"
        outcome, seconds = _run_one(ClaimedJob(
            1, 1, "t", "python:tests.handlers_for_tests:spin_on", {"cpu": cpu, "seconds": 0.15},
            None))
    finally:
        for proc in hogs:
            proc.kill()
            proc.wait()
    assert outcome.state == "succeeded", outcome.error
    wall = float(outcome.result)
    assert seconds >= 0.14, (seconds, wall)  # it ran that long at least
    assert seconds < 0.75 * wall, (seconds, wall)  # not the time the hogs ran


def test_a_handler_that_sleeps_counts_its_sleep() -> None:
    outcome, seconds = _run_one(_python_job(1, "sleepy"))
    assert outcome.state == "succeeded", outcome.error
    assert seconds >= 0.1


def test_a_handler_time_of_zero_is_its_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler's time less its waits for a CPU may come out as 0: that is its time, not
    a missing one to be replaced by the round trip (0.3 s late here)."""
    wait = PythonChild.wait

    def instant(self: PythonChild, *args: object, **kwargs: object) -> dict[str, object]:
        outcome = wait(self, *args, **kwargs)  # type: ignore[arg-type]
        outcome["seconds"] = 0.0
        time.sleep(0.3)
        return outcome

    monkeypatch.setattr(PythonChild, "wait", instant)
    outcome, seconds = _run_one(_python_job(1))
    assert outcome.state == "succeeded", outcome.error
    assert seconds == 0.0
