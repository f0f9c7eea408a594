"""The executor's local queue (jobs placed on a worker beyond what runs at once)."""

from __future__ import annotations

import threading
import time

from taskyard.store.records import ClaimedJob, Outcome
from taskyard.worker.executor import Executor


def test_queued_jobs_start_by_priority_then_age() -> None:
    ended: list[Outcome] = []
    done = threading.Event()

    def on_done(outcome: Outcome, _seconds: float) -> None:
        ended.append(outcome)
        if len(ended) == 5:
            done.set()

    executor = Executor(1, on_done=on_done, prewarm=False, guard=False)
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
