"""Runs the jobs placed on a worker in child processes; no database here (the
:class:`~taskyard.worker.executors.Executor` of ``taskyard worker``).

Jobs wait in a local queue in placement order; a slot thread starts the head job as soon
as the running jobs leave room for its cost (an idle executor always takes one job,
whatever its cost). Each slot owns (lazily) one reusable Python child, so a job reaches a
warm interpreter with one pipe message; a child that is killed (timeout, cancel, crash)
is replaced. Every started attempt produces exactly one :class:`Outcome` through
``on_done``; starts are collected for the worker to record in its next batch.
"""

from __future__ import annotations

import functools
import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from taskyard.core.handlers import HandlerSpecError
from taskyard.core.lifecycle import may_start
from taskyard.core.prefetch import PaceTracker
from taskyard.core.stages import StageReport
from taskyard.model.records import ClaimedJob, Outcome
from taskyard.worker.child_slots import ChildSlots
from taskyard.worker.executors import Key, StageSink
from taskyard.worker.guardian import Guardian
from taskyard.worker.log_pump import LogPump
from taskyard.worker.outcomes import (
    CELERY_ELSEWHERE,
    is_python,
    job_environment,
    outcome_of,
    parse_handler,
)
from taskyard.worker.processes import Stopped, run_shell
from taskyard.worker.tracing import AttemptSpans, environment

log = logging.getLogger("taskyard.worker")
jobs_log = logging.getLogger("taskyard.jobs")
"""One line per job started and ended (shown from ``-v`` on)."""
PIPELINE = 16
"""Most jobs sent to a child in one message (a pipeline: see :meth:`ProcessExecutor._next`)."""
PIPELINE_WINDOW = 0.005
"""Seconds of work (at the recent pace) a pipeline may hold: only short jobs are
pipelined, so a pipeline never keeps a job waiting behind a long one."""


class ProcessExecutor:
    """Handlers in child processes: ``python:`` ones in a warm interpreter per slot,
    ``shell:`` ones through ``/bin/sh`` (see the module docstring)."""

    def __init__(self, capacity: int, *, on_done: Callable[[Outcome, float | None], None],
                 on_start: Callable[[], None] = lambda: None,
                 on_stage: StageSink = lambda _j, _a, _r: True, tail_bytes: int = 8192,
                 kill_grace: float = 5.0, prewarm: bool = True,
                 worker_name: str = "", guard: bool = True,
                 pipeline_window: float = PIPELINE_WINDOW,
                 logs: LogPump | None = None) -> None:
        """``on_done(outcome, seconds)`` gets each attempt's end and how long it ran (its
        span ends first); ``on_start``: a job starts (see :meth:`take_started`);
        ``worker_name``: what handlers see as ``TASKYARD_WORKER``;
        ``guard``: start a :class:`Guardian` so that handlers die with the worker;
        ``logs``: reads what running attempts write (live output; a job run in a
        pipeline of short ones, see :meth:`_next`, has only its tails, at its end)."""
        self.capacity = capacity
        self.pipeline_window = pipeline_window
        self.slots = max(1, capacity)
        self.prewarm = prewarm
        self.spans = AttemptSpans(lambda: self.worker_name)  # an outcome ends its span
        self.on_done = self.spans.ending(on_done)
        self.on_start = on_start
        self.on_stage = on_stage
        self.tail_bytes = tail_bytes
        self.kill_grace = kill_grace
        self.worker_name = worker_name
        self.guardian = Guardian() if guard else None
        self.logs = logs
        self._cond = threading.Condition()
        # Queued jobs in placement order (priority, then oldest): urgent ones go first.
        self._queue: list[tuple[int, int, ClaimedJob]] = []
        self._held: dict[Key, str | None] = {}
        """Every attempt handed to us and not yet released: → None, or its state to report."""
        self._used = 0
        self._executing = 0
        self._piped = 0
        """Jobs sent to a child behind the one it runs: not started yet."""
        self._pace = PaceTracker()  # job durations: the pipeline depth
        self._ran: list[tuple[float, float | None] | None] = [None] * self.slots  # _finish
        self._started: list[tuple[int, int, float]] = []
        self._closing = False
        self._refusing = False
        """Set by :meth:`stop_all`: no job is queued any more (the worker is leaving)."""
        self._children = ChildSlots(self.slots, guardian=self.guardian, logs=logs)
        self._threads = [threading.Thread(target=self._slot, name=f"slot-{i}", daemon=True)
                         for i in range(self.slots)]
        for thread in self._threads:
            thread.start()

    def submit(self, jobs: Iterable[ClaimedJob]) -> None:
        """Queue jobs (in placement order); each starts when there is room for it.
        Ignored once :meth:`stop_all` ran (jobs may come from more than one thread)."""
        with self._cond:
            if self._refusing or self._closing:
                return
            keyed = {(j.job_id, j.attempt): j for j in jobs}
            fresh = {key: job for key, job in keyed.items() if key not in self._held}
            for key, job in fresh.items():
                self._held[key] = None
                heapq.heappush(self._queue, (-job.priority, job.job_id, job))
            # A slot a job (see _next): every slot woken for a chain's job cost the GIL.
            self._cond.notify(len(fresh))

    def stop(self, job_id: int, attempt: int, *, state: str = "canceled") -> bool:
        """Stop that attempt: drop it if queued, else terminate its child and report its
        outcome with ``state``. False when it is not held (ended and released)."""
        key = (job_id, attempt)
        with self._cond:
            if key not in self._held:
                return False
            queued = next((q for q in self._queue if (q[2].job_id, q[2].attempt) == key), None)
            if queued is not None:
                self._queue.remove(queued)
                heapq.heapify(self._queue)
                del self._held[key]
            else:
                self._held[key] = state
        return True

    def stop_all(self, state: str = "error", *, grace: float | None = None) -> None:
        """Stop every attempt held (see :meth:`stop`) and accept no more: for a worker
        that leaves or is fenced. ``grace`` shortens :attr:`kill_grace` (a fenced
        worker's children must be gone before its lease runs out)."""
        if grace is not None:
            self.kill_grace = min(self.kill_grace, grace)
        with self._cond:
            self._refusing = True
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
        """Jobs not started yet: in the queue, or pipelined behind a running one."""
        with self._cond:
            return len(self._queue) + self._piped

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
        self._children.close()
        if self.guardian is not None:
            self.guardian.close()

    def _fits(self, job: ClaimedJob) -> bool:
        # A slot asks only while it is free: the bound on handlers at once holds here.
        return may_start(self._executing, self._used, job.cost, self.capacity)

    def _next(self) -> list[ClaimedJob] | None:
        """Wait for the head job to fit, take it, and account for it (None: closing).
        While jobs are short, a few more queued Python jobs of the same cost follow it in
        a pipeline, sent to the child in one message (no round trip through this process
        between them). They start one by one (see :meth:`_finish`): the room the head took
        passes to each in turn. The depth is bounded by ``PIPELINE_WINDOW`` of work at
        the recent pace, and by a fair share of the queue among the slots."""
        with self._cond:
            while not self._closing and not (self._queue and self._fits(self._queue[0][2])):
                self._cond.wait()
            if self._closing:
                return None
            job = heapq.heappop(self._queue)[2]
            self._used += job.cost
            self._executing += 1
            self._began(job)
            batch = [job]
            depth = self._depth(job)
            while len(batch) < depth and self._queue:
                follower = self._queue[0][2]
                if follower.cost != job.cost or not is_python(follower.handler):
                    break
                batch.append(heapq.heappop(self._queue)[2])
            self._piped += len(batch) - 1
            if self._queue and self._fits(self._queue[0][2]):
                self._cond.notify()  # the next job can start too: pass the wake-up on
        return batch

    def _depth(self, head: ClaimedJob) -> int:
        pace = self._pace.mean
        if pace is None or not self._queue or not is_python(head.handler):
            return 1
        share = -(-len(self._queue) // self.slots)  # ceil: keep every slot fed
        return 1 + min(PIPELINE - 1, share, int(self.pipeline_window / max(pace, 1e-6)))

    def _slot(self) -> None:
        index = int(threading.current_thread().name.split("-")[1])
        if self.prewarm:
            # Start the interpreter now, so that even the first job finds it warm.
            try:
                self._children.prewarm(index)
            except OSError:
                log.exception("event=prewarm-failed slot=%d", index)
        while True:
            batch = self._next()
            if batch is None:
                return
            if len(batch) > 1:
                self._pipeline(index, batch)
                continue
            job = batch[0]
            started = time.monotonic()
            try:
                outcome = self._run(index, job)
            except Exception as exc:  # never lose an attempt's outcome
                outcome = self._crashed(job, exc)
            self._finish(index, job, outcome, time.monotonic() - started)

    @staticmethod
    def _crashed(job: ClaimedJob, exc: Exception) -> Outcome:
        log.exception("event=executor-error job=%s", job.job_id)
        return Outcome(job.job_id, job.attempt, "error", error=f"worker error: {exc}")

    def _finish(self, index: int, job: ClaimedJob, outcome: Outcome, elapsed: float,
                then: ClaimedJob | None = None) -> None:
        """Hand ``outcome`` in, then free its room — or pass the room to ``then``, the
        next job of a pipeline, which the child started as it sent this outcome. Its time:
        its Python handler's own, as slot ``index``'s child said (not the round trip: see
        core.prefetch; None for its first run there), else ``elapsed`` here (0 is a time)."""
        ran, self._ran[index] = self._ran[index], None
        seconds, pace = (elapsed, elapsed) if ran is None else ran
        jobs_log.info("event=job-ended job=%s attempt=%s type=%s state=%s ms=%.1f",
                      job.job_id, job.attempt, job.type, outcome.state, seconds * 1000)
        # Hand the outcome in before freeing the room: whoever reads the starts, then the
        # ends (the worker's report) never sees a job take this one's room without also
        # seeing this one end — the database never shows more running than the capacity.
        self.on_done(outcome, pace)
        with self._cond:
            self._pace.observe(pace)
            if then is None:  # no wake-up: this slot takes the next job itself (_next)
                self._used -= job.cost
                self._executing -= 1
                return
            # The same cost (see _next): the room passes on, never free meanwhile.
            self._piped -= 1
            self._began(then)
        self.on_start()

    def _began(self, job: ClaimedJob) -> None:
        """Record that ``job`` starts now (the worker reports the starts); lock held."""
        self._started.append((job.job_id, job.attempt, time.monotonic()))
        jobs_log.info("event=job-started job=%s attempt=%s type=%s", job.job_id,
                      job.attempt, job.type)

    def _pipeline(self, index: int, batch: list[ClaimedJob]) -> None:
        """Run a pipeline (see :meth:`_next`) in slot ``index``'s child. When an attempt
        ends the child (timeout, stop, crash), the jobs behind it never started: they
        go back to the queue, or are dropped if they were stopped meanwhile."""
        rest = list(batch)
        try:
            self._children.get(index).send_pipeline([self._message(job) for job in batch])
        except Exception as exc:  # never lose an attempt's outcome (its end wakes the loop)
            self._children.drop(index, self.kill_grace)
            self._finish(index, rest[0], self._crashed(rest[0], exc), 0.0)
            self._requeue(rest[1:])
            return
        self.on_start()  # once the child has them: see _run_python
        while rest:
            job = rest.pop(0)
            started = time.monotonic()
            try:
                outcome = outcome_of(job, functools.partial(self._wait_python, index, job,
                                     follower=job is not batch[0]), self._stop_state)
            except Exception as exc:  # the child was ended (see _wait_python)
                outcome = self._crashed(job, exc)
            took = time.monotonic() - started
            if self._children.current(index) is None:  # the child was ended: the rest never ran
                self._finish(index, job, outcome, took)
                self._requeue(rest)
                return
            self._finish(index, job, outcome, took, rest[0] if rest else None)

    def _requeue(self, jobs: list[ClaimedJob]) -> None:
        with self._cond:
            self._piped -= len(jobs)
            for job in jobs:
                key = (job.job_id, job.attempt)
                if key in self._held and self._held[key] is None and not self._closing:
                    heapq.heappush(self._queue, (-job.priority, job.job_id, job))
                else:  # stopped before it started: nothing to report
                    self._held.pop(key, None)
            self._cond.notify(len(jobs))

    def _stop_state(self, key: Key) -> str | None:
        with self._cond:
            return self._held.get(key)

    def _run(self, index: int, job: ClaimedJob) -> Outcome:
        try:
            spec = parse_handler(job.handler)
        except HandlerSpecError as exc:  # (its end wakes the loop)
            return Outcome(job.job_id, job.attempt, "error", error=str(exc))
        if spec.kind == "python":
            return outcome_of(job, lambda: self._run_python(index, job), self._stop_state)
        self.on_start()
        if spec.kind == "celery":
            return Outcome(job.job_id, job.attempt, "error",
                           error=CELERY_ELSEWHERE.format(handler=job.handler))
        deadline = None if job.timeout is None else time.monotonic() + job.timeout
        return outcome_of(job, lambda: run_shell(
            spec.target, job.args, self._env(job), deadline=deadline,
            stop_requested=self._stop_check(job), grace=lambda: self.kill_grace,
            tail=self.tail_bytes, stages=job.stages, on_stage=self._stage_sink(job),
            guardian=self.guardian, watch=None if self.logs is None else functools.partial(
                self.logs.watch, (job.job_id, job.attempt))), self._stop_state)

    def _env(self, job: ClaimedJob) -> dict[str, str]:  # TRACEPARENT: its span's context
        return job_environment(job, self.worker_name) | environment(self.spans.start(job))

    def _stop_check(self, job: ClaimedJob) -> Callable[[], bool]:
        key = (job.job_id, job.attempt)
        return lambda: self._stop_state(key) is not None

    def _stage_sink(self, job: ClaimedJob) -> Callable[[StageReport], bool]:
        def on_stage(report: StageReport) -> bool:
            if self.on_stage(job.job_id, job.attempt, report):
                return True
            # Refused: this attempt is no longer current; end it like a fenced one.
            self.stop(job.job_id, job.attempt, state="error")
            return False
        return on_stage

    def _message(self, job: ClaimedJob) -> dict[str, Any]:
        """What the Python child needs to run ``job`` (its handler spec parses: is_python)."""
        return {"target": parse_handler(job.handler).target, "args": job.args,
                "env": self._env(job), "tail": self.tail_bytes, "job_id": job.job_id,
                "attempt": job.attempt, "stages": job.stages}

    def _run_python(self, index: int, job: ClaimedJob) -> dict[str, Any]:
        child = self._children.get(index)  # once: it looks whether the child is alive
        ended = self._children.watch(child, (job.job_id, job.attempt))
        child.send_pipeline([self._message(job)])
        self.on_start()  # only now: a loop woken before took the GIL from this send
        return self._wait_python(index, job, ended=ended)

    def _wait_python(self, index: int, job: ClaimedJob, *, follower: bool = False,
                     ended: Callable[[], None] | None = None) -> dict[str, Any]:
        """The outcome of ``job``, which slot ``index``'s child runs now: it started it
        as it sent the previous outcome (a ``follower`` in a pipeline: if it was
        stopped before that, it is stopped at once), or as it received it. ``ended``:
        called once it ended (its live output read to the end)."""
        child = self._children.current(index)
        assert child is not None
        deadline = None if job.timeout is None else time.monotonic() + job.timeout
        stop_requested = self._stop_check(job)
        try:
            if follower and stop_requested():
                raise Stopped
            outcome = child.wait(deadline, stop_requested, self._stage_sink(job))
        except BaseException:
            # The child is in an unknown state: end it and start afresh next time —
            # once what it wrote is read (a canceled attempt keeps it).
            self._children.drop(index, self.kill_grace, before_discard=ended)
            raise
        if ended is not None:
            ended()
        took = outcome.get("seconds")  # a handler's first run in its child: no pace
        self._ran[index] = None if took is None else (took, None if "cold" in outcome else took)
        return outcome
