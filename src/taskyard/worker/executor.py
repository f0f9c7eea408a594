"""Runs the jobs placed on a worker in child processes; no database here.

Jobs wait in a local queue in placement order; a slot thread starts the head job as
soon as the running jobs leave room for its cost (an idle executor always takes
one job, whatever its cost). Each slot owns (lazily) one reusable Python child, so a
job reaches a warm interpreter with one pipe message; a child that is killed
(timeout, cancel, crash) is replaced. Every started attempt produces exactly one
:class:`Outcome` through ``on_done``; starts are collected for the worker to
record in its next batch.
"""

from __future__ import annotations

import heapq
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.core.stages import StageReport
from taskyard.store.records import ClaimedJob, Outcome
from taskyard.worker.guardian import Guardian
from taskyard.worker.processes import ChildDied, PythonChild, Stopped, run_shell

log = logging.getLogger("taskyard.worker")
TIMEOUT_EXIT_CODE = 130
Key = tuple[int, int]

StageSink = Callable[[int, int, StageReport], bool]
"""Records a stage report of (job, attempt); False means refused (fenced)."""


def _no_stages(_job: int, _attempt: int, _report: StageReport) -> bool:
    return True


class Executor:
    def __init__(self, capacity: int, *, on_done: Callable[[Outcome, float], None],
                 on_start: Callable[[], None] = lambda: None,
                 on_stage: StageSink = _no_stages, tail_bytes: int = 8192,
                 kill_grace: float = 5.0, prewarm: bool = True,
                 env: dict[str, str] | None = None, guard: bool = True) -> None:
        """``on_done(outcome, seconds)`` gets each attempt's end and how long it ran;
        ``on_start`` is called when a job starts (see :meth:`take_started`);
        ``env``: extra environment for every handler (e.g. ``TASKYARD_WORKER``);
        ``guard``: start a :class:`Guardian` so that handlers die with the worker."""
        self.capacity = capacity
        self.slots = max(1, capacity)
        self.prewarm = prewarm
        self.on_done = on_done
        self.on_start = on_start
        self.on_stage = on_stage
        self.tail_bytes = tail_bytes
        self.kill_grace = kill_grace
        self.env = dict(env or {})
        self.guardian = Guardian() if guard else None
        self._cond = threading.Condition()
        # Queued jobs in placement order (highest priority, then oldest): a job placed
        # here later but more urgent starts before the ones already queued.
        self._queue: list[tuple[int, int, ClaimedJob]] = []
        self._held: dict[Key, str | None] = {}
        """Every attempt handed to us and not yet released: → None, or the state to
        report once it is stopped."""
        self._used = 0
        self._executing = 0
        self._started: list[tuple[int, int, float]] = []
        self._closing = False
        self._children: list[PythonChild | None] = [None] * self.slots
        self._threads = [threading.Thread(target=self._slot, name=f"slot-{i}", daemon=True)
                         for i in range(self.slots)]
        for thread in self._threads:
            thread.start()

    def submit(self, jobs: Iterable[ClaimedJob]) -> None:
        """Queue jobs (in placement order); each starts when there is room for it."""
        with self._cond:
            for job in jobs:
                key = (job.job_id, job.attempt)
                if key not in self._held:
                    self._held[key] = None
                    heapq.heappush(self._queue, (-job.priority, job.job_id, job))
            self._cond.notify_all()

    def start(self, job: ClaimedJob) -> None:
        self.submit([job])

    def stop(self, job_id: int, attempt: int, *, state: str = "canceled") -> None:
        """Stop that attempt: drop it if queued, else terminate its child and report its
        outcome with ``state``."""
        key = (job_id, attempt)
        with self._cond:
            if key not in self._held:
                return
            queued = next((q for q in self._queue if (q[2].job_id, q[2].attempt) == key), None)
            if queued is not None:
                self._queue.remove(queued)
                heapq.heapify(self._queue)
                del self._held[key]
            else:
                self._held[key] = state

    def stop_all(self, state: str = "error") -> None:
        with self._cond:
            for _, _, job in self._queue:
                self._held.pop((job.job_id, job.attempt), None)
            self._queue.clear()
            for key in self._held:
                self._held[key] = state

    def release(self, keys: Iterable[Key]) -> None:
        """Forget attempts whose outcome the worker has reported."""
        with self._cond:
            for key in keys:
                self._held.pop(key, None)

    def take_started(self) -> list[tuple[int, int, float]]:
        """(job, attempt, monotonic start) of the jobs started since the last call."""
        with self._cond:
            started, self._started = self._started, []
        return started

    def running(self) -> list[Key]:
        """Every attempt held: queued, executing, or ended but not yet released."""
        with self._cond:
            return list(self._held)

    def busy(self) -> int:
        """Attempts held (queued, executing, or ended and not yet released)."""
        with self._cond:
            return len(self._held)

    def queued(self) -> int:
        with self._cond:
            return len(self._queue)

    def shutdown(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop the slots (killing running children with ``kill``) and wait for them."""
        if kill:
            self.stop_all("error")
        with self._cond:
            self._closing = True
            self._queue.clear()
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for child in self._children:
            if child is not None:
                child.close()
        if self.guardian is not None:
            self.guardian.close()

    def _fits(self, job: ClaimedJob) -> bool:
        return self._executing == 0 or self._used + job.cost <= self.capacity

    def _next(self) -> ClaimedJob | None:
        """Wait for the head job to fit, take it, and account for it (None: closing)."""
        with self._cond:
            while not self._closing and not (self._queue and self._fits(self._queue[0][2])):
                self._cond.wait()
            if self._closing:
                return None
            job = heapq.heappop(self._queue)[2]
            self._used += job.cost
            self._executing += 1
            self._started.append((job.job_id, job.attempt, time.monotonic()))
        self.on_start()
        return job

    def _slot(self) -> None:
        index = int(threading.current_thread().name.split("-")[1])
        if self.prewarm:
            # Start the interpreter now, so that even the first job finds it warm.
            try:
                self._children[index] = PythonChild(self.guardian)
            except OSError:
                log.exception("event=prewarm-failed slot=%d", index)
        while True:
            job = self._next()
            if job is None:
                return
            started = time.monotonic()
            try:
                outcome = self._run(index, job)
            except Exception as exc:  # never lose an attempt's outcome
                log.exception("event=executor-error job=%s", job.job_id)
                outcome = Outcome(job.job_id, job.attempt, "error", error=f"worker error: {exc}")
            seconds = time.monotonic() - started
            log.debug("event=finished job=%s attempt=%s state=%s ms=%.1f", job.job_id,
                      job.attempt, outcome.state, seconds * 1000)
            # Hand the outcome in before freeing the room: whoever reads the starts and
            # then the ends (the worker's report) never sees a job take this one's room
            # without also seeing this one end — the database never shows more running
            # than the capacity.
            self.on_done(outcome, seconds)
            with self._cond:
                self._used -= job.cost
                self._executing -= 1
                self._cond.notify_all()

    def _stop_state(self, key: Key) -> str | None:
        with self._cond:
            return self._held.get(key)

    def _run(self, index: int, job: ClaimedJob) -> Outcome:
        key = (job.job_id, job.attempt)
        try:
            spec = parse_handler(job.handler)
        except HandlerSpecError as exc:
            return Outcome(job.job_id, job.attempt, "error", error=str(exc))
        deadline = None if job.timeout is None else time.monotonic() + job.timeout
        env = {**self.env, "TASKYARD_JOB_ID": str(job.job_id),
               "TASKYARD_ATTEMPT": str(job.attempt), "TASKYARD_ARGS": json.dumps(job.args)}

        def stop_requested() -> bool:
            return self._stop_state(key) is not None

        def on_stage(report: StageReport) -> bool:
            if self.on_stage(job.job_id, job.attempt, report):
                return True
            # Refused: this attempt is no longer current; end it like a fenced one.
            self.stop(job.job_id, job.attempt, state="error")
            return False

        try:
            if spec.kind == "shell":
                raw = run_shell(spec.target, job.args, env, deadline=deadline,
                                stop_requested=stop_requested, grace=lambda: self.kill_grace,
                                tail=self.tail_bytes, stages=job.stages, on_stage=on_stage,
                                guardian=self.guardian)
            else:
                raw = self._run_python(index, spec.target, job, env, deadline=deadline,
                                       stop_requested=stop_requested, on_stage=on_stage)
        except TimeoutError as exc:
            tails = exc.args[0] if exc.args else {}
            return Outcome(job.job_id, job.attempt, "failed", TIMEOUT_EXIT_CODE,
                           error=f"timed out after {job.timeout:g}s", **tails)
        except Stopped as exc:
            tails = exc.args[0] if exc.args else {}
            return Outcome(job.job_id, job.attempt, self._stop_state(key) or "canceled",
                           error="stopped", **tails)
        except ChildDied as exc:
            return Outcome(job.job_id, job.attempt, "error", error=str(exc))
        return Outcome(job.job_id, job.attempt, raw["state"], raw.get("exit_code"),
                       raw.get("result"), raw.get("error"), raw.get("stdout_tail"),
                       raw.get("stderr_tail"))

    def _run_python(
        self, index: int, target: str, job: ClaimedJob, env: dict[str, str], *,
        deadline: float | None, stop_requested: Callable[[], bool],
        on_stage: Callable[[StageReport], bool],
    ) -> dict[str, Any]:
        child = self._children[index]
        if child is None or not child.process.is_alive():
            child = self._children[index] = PythonChild(self.guardian)
        msg = {"target": target, "args": job.args, "env": env, "tail": self.tail_bytes,
               "job_id": job.job_id, "attempt": job.attempt, "stages": job.stages}
        try:
            return child.run(msg, deadline, stop_requested, on_stage)
        except (TimeoutError, Stopped, ChildDied):
            # The child is in an unknown state: end it and start afresh next time.
            child.kill(self.kill_grace)
            self._children[index] = None
            raise
