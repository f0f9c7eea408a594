"""Runs claimed jobs in child processes, at most ``slots`` at once; no database here.

Each slot is a thread that owns (lazily) one reusable Python child, so a job
reaches a warm interpreter with one pipe message. A child that is killed
(timeout, cancel, crash) is replaced. Every started attempt produces exactly
one :class:`Outcome` through ``on_done``.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.core.stages import StageReport
from taskyard.store.records import ClaimedJob, Outcome
from taskyard.worker.guardian import Guardian
from taskyard.worker.processes import ChildDied, PythonChild, Stopped, run_shell

log = logging.getLogger("taskyard.worker")
TIMEOUT_EXIT_CODE = 130

StageSink = Callable[[int, int, StageReport], bool]
"""Records a stage report of (job, attempt); False means refused (fenced)."""


def _no_stages(_job: int, _attempt: int, _report: StageReport) -> bool:
    return True


class Executor:
    def __init__(self, slots: int, *, on_done: Callable[[Outcome], None],
                 on_stage: StageSink = _no_stages, tail_bytes: int = 8192,
                 kill_grace: float = 5.0, prewarm: bool = True,
                 env: dict[str, str] | None = None, guard: bool = True) -> None:
        """``env``: extra environment for every handler (e.g. ``TASKYARD_WORKER``);
        ``guard``: start a :class:`Guardian` so that handlers die with the worker."""
        self.slots = max(1, slots)
        self.env = dict(env or {})
        self.guardian = Guardian() if guard else None
        self.prewarm = prewarm
        self.on_done = on_done
        self.on_stage = on_stage
        self.tail_bytes = tail_bytes
        self.kill_grace = kill_grace
        self._queue: queue.SimpleQueue[ClaimedJob | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: dict[tuple[int, int], str | None] = {}
        """(job, attempt) → None while running, or the state to report once stopped."""
        self._children: list[PythonChild | None] = [None] * self.slots
        self._threads = [threading.Thread(target=self._slot, name=f"slot-{i}", daemon=True)
                         for i in range(self.slots)]
        for thread in self._threads:
            thread.start()

    def start(self, job: ClaimedJob) -> None:
        """Queue a job; it starts as soon as a slot is free (non-blocking)."""
        with self._lock:
            self._running[(job.job_id, job.attempt)] = None
        self._queue.put(job)

    def stop(self, job_id: int, attempt: int, *, state: str = "canceled") -> None:
        """Terminate that attempt's child; its outcome is reported with ``state``."""
        with self._lock:
            if (job_id, attempt) in self._running:
                self._running[(job_id, attempt)] = state

    def stop_all(self, state: str = "error") -> None:
        with self._lock:
            for key in self._running:
                self._running[key] = state

    def running(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._running)

    def busy(self) -> int:
        with self._lock:
            return len(self._running)

    def shutdown(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop the slots (killing running children with ``kill``) and wait for them."""
        if kill:
            self.stop_all("error")
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for child in self._children:
            if child is not None:
                child.close()
        if self.guardian is not None:
            self.guardian.close()

    def _slot(self) -> None:
        index = int(threading.current_thread().name.split("-")[1])
        if self.prewarm:
            # Start the interpreter now, so that even the first job finds it warm.
            try:
                self._children[index] = PythonChild(self.guardian)
            except OSError:
                log.exception("event=prewarm-failed slot=%d", index)
        while True:
            job = self._queue.get()
            if job is None:
                return
            key = (job.job_id, job.attempt)
            started = time.monotonic()
            try:
                outcome = self._run(index, job)
            except Exception as exc:  # never lose an attempt's outcome
                log.exception("event=executor-error job=%s", job.job_id)
                outcome = Outcome(job.job_id, job.attempt, "error", error=f"worker error: {exc}")
            with self._lock:
                self._running.pop(key, None)
            log.debug("event=finished job=%s attempt=%s state=%s ms=%.1f", job.job_id,
                      job.attempt, outcome.state, (time.monotonic() - started) * 1000)
            self.on_done(outcome)

    def _stop_state(self, key: tuple[int, int]) -> str | None:
        with self._lock:
            return self._running.get(key)

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
