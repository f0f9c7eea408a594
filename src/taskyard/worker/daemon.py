"""The worker's loop: lease, placed jobs, batched reports, clean stop — whatever runs
the jobs (an :class:`~taskyard.worker.executors.Executor`: handlers in child processes
for ``taskyard worker``, Celery tasks for ``taskyard celery-pool``).

Threads, each asleep until woken or due: the loop (reports what the executor started
and finished, runs the scheduling cycle, picks up the jobs placed here — one transaction
whatever the batch: group commit), a listener (wakes the loop when jobs are dispatched
here or one of ours is canceled), the lease's heartbeat and watchdog (worker/lease.py).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Sequence

from taskyard.core.prefetch import DEFAULT_PREFETCH, PaceTracker, prefetch_window, worth_declaring
from taskyard.core.stages import StageReport
from taskyard.model.errors import InvalidInput
from taskyard.model.records import Assignment, Outcome, Started
from taskyard.store import Store
from taskyard.store.driver import Listener
from taskyard.store.transitions.logs import LogChunk, append_logs
from taskyard.worker.deliveries import Deliveries, Key
from taskyard.worker.executors import ABANDONED, Executor, ExecutorFactory, Hooks
from taskyard.worker.lease import Lease
from taskyard.worker.log_pump import INTERVAL, LIMIT, LogPump
from taskyard.worker.process_executor import ProcessExecutor
from taskyard.worker.reports import Placer, report_batch
from taskyard.worker.unreported import Unreported

log = logging.getLogger("taskyard.worker")
jobs_log = logging.getLogger("taskyard.jobs")
GATHER = 0.010
"""Seconds a busy worker lets ends accumulate before it reports them (group commit):
only while its queue keeps every slot busy meanwhile (see ``WorkerDaemon._gather``)."""
GATHER_BATCH = 256
START_HOLD = 0.020
"""Seconds a start waits for its job's end before it is reported alone, while jobs are
this short on average: one report then carries both (a start alone is a transaction on
the path of the job's end, and of the next job of a chain)."""
LISTEN_WAIT = 60.0
"""Longest wait of the listener thread for a wake-up (a stop interrupts it)."""


class WorkerDaemon:
    """One worker: registers, serves its pools with its executor, leaves cleanly."""

    def __init__(
        self, store: Store, *, name: str | None = None, pools: Sequence[str] = ("default",),
        capacity: int | None = None, lease_seconds: float = 15.0,
        heartbeat_every: float | None = None, kill_grace: float = 5.0,
        placer: Placer | None = None, prefetch: int = DEFAULT_PREFETCH,
        executor: ExecutorFactory | None = None, log_interval: float | None = INTERVAL,
        log_limit: int = LIMIT,
    ) -> None:
        """``placer`` runs the scheduling cycle inside each batch that reports
        completions (the CLI passes it), so freed capacity is refilled at once (seed
        000 runs schedule() on job completion), and once after the worker registers,
        so that work submitted before it came is placed without a scheduler.
        ``prefetch``: the widest window of jobs queued here beyond ``capacity`` (see
        :mod:`taskyard.core.prefetch`). ``executor`` builds what runs the jobs
        (default: handlers in child processes, :class:`ProcessExecutor`).
        ``log_interval``: seconds between reads of what running attempts write, each
        attempt keeping the newest ``log_limit`` bytes of a stream (live output, child
        processes only; None: their tails only, at their end)."""
        self.store = store
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.pools = tuple(pools)
        self.capacity = capacity if capacity is not None else (os.cpu_count() or 1)
        self.lease_seconds = lease_seconds
        self.heartbeat_every = heartbeat_every or max(0.2, lease_seconds / 5)
        self.look_every = max(1.0, self.heartbeat_every)
        """Seconds between looks at what is placed here when no wake-up asked for one
        (a wake-up lost with a listener's silently broken connection): each is a read,
        and a fleet of idle workers made mostly of them (bench.fleet)."""
        self.placer = placer
        self.prefetch = prefetch
        self._kick = threading.Event()
        self._woken = threading.Event()
        self._listener: Listener | None = None
        self._place_first = False
        """A cycle is due once registered: work may be waiting for the room we bring."""
        self._deliveries = Deliveries(store.jobs_in_wakeups)
        self._looked = 0.0
        self._hold_until: float | None = None
        self._pace = PaceTracker()
        self._window: int | None = None if prefetch > 0 else 0
        """The window declared (None: none yet; placement lends one meanwhile)."""
        hooks = Hooks(on_done=self._on_done, on_start=self._kick.set,
                      on_stage=self._report_stage)
        self.logs = None if executor is not None or log_interval is None else LogPump(
            self._write_logs, on_refused=self._logs_refused, interval=log_interval,
            limit=log_limit)
        self.executor: Executor = (
            executor(hooks) if executor is not None else ProcessExecutor(
                self.capacity, on_done=hooks.on_done, on_start=hooks.on_start,
                on_stage=hooks.on_stage, kill_grace=kill_grace, worker_name=self.name,
                logs=self.logs))
        self.executor.worker_name = self.name
        self._unreported = Unreported(self.executor.take_started)
        self.lease = Lease(store, self.executor, name=self.name, seconds=lease_seconds,
                           heartbeat_every=self.heartbeat_every, wake=self._kick.set)
        self.worker_id: int | None = None
        self.stats = {"claimed": 0, "completed": 0, "refused": 0, "reports": 0}

    @property
    def fenced(self) -> bool:
        """Did the worker stop because it lost its lease (expelled, or self-fenced)?"""
        return self.lease.fenced.is_set()

    def rename(self, name: str) -> None:
        """Register as ``name`` instead (the first choice was taken)."""
        self.name = self.lease.name = self.executor.worker_name = name

    def register(self) -> int:
        """Join the cluster (the lease runs from now); the worker's id."""
        try:
            record = self.store.workers.register(
                self.name, self.pools, self.capacity, lease_seconds=self.lease_seconds,
                hostname=socket.gethostname(), pid=os.getpid(), prefetch=self.prefetch,
            )
        except InvalidInput:
            # Refused for good (a Conflict may be retried under another name): let the
            # executor's threads end (a child process warming up starts and closes, so
            # none outlives us half-spawned).
            self.executor.shutdown(kill=True)
            raise
        self.worker_id = record.id
        self.lease.granted(record.id)
        log.info("event=worker-started worker=%s id=%s pools=%s capacity=%s", self.name,
                 record.id, ",".join(self.pools), self.capacity)
        return record.id

    def run(self, stop: threading.Event) -> None:
        """Register, serve until ``stop`` is set (or the lease is lost), then leave
        cleanly."""
        self.register()
        threads = [*self.lease.threads(stop),
                   threading.Thread(target=self._listen, args=(stop,), daemon=True)]
        logs_stop = threading.Event()
        if self.logs is not None:
            threads.append(threading.Thread(target=self.logs.run, args=(logs_stop,),
                                            name="logs", daemon=True))
        for thread in threads:
            thread.start()
        failures = 0
        # Seed 000 schedules on creation and completion only: a job submitted while no
        # worker served its pool waits for a cycle, and no scheduler may be running.
        self._place_first = self.placer is not None
        try:
            self._woken.set()  # look for work placed before we listened
            self._kick.set()
            while not stop.is_set() and not self.fenced:
                # Until kicked (wake-up, end, start, stop) or a look or held start is due.
                due = self._looked + self.look_every
                if self._hold_until is not None:
                    due = min(due, self._hold_until)
                self._kick.wait(max(0.0, due - time.monotonic()))
                self._kick.clear()
                if self._gather():
                    stop.wait(GATHER)  # group commit: let a few more jobs end first
                if stop.is_set():
                    break
                try:
                    self.exchange()
                    failures = 0
                except Exception as exc:
                    failures += 1
                    log.error("event=pump-failed worker=%s attempt=%d error=%s", self.name,
                              failures, " ".join(str(exc).split())[:200])
                    stop.wait(min(0.05 * 2**failures, 2.0))
                    self._kick.set()
        finally:
            self._shutdown(stop)
            logs_stop.set()  # after the attempts' last words
            if self.logs is not None:
                self.logs.wake()
            for thread in threads:
                thread.join(10)

    def _gather(self) -> bool:
        """Wait a moment before reporting? Only while enough jobs wait queued here to
        keep every slot busy meanwhile, no wake-up asks us to look, and the batch is
        small: then a report costs the same for many more jobs."""
        return (not self._woken.is_set() and self._unreported.ends() < GATHER_BATCH
                and self.executor.queued() >= max(1, self.capacity))

    def _on_done(self, outcome: Outcome, seconds: float | None) -> None:
        if outcome.state == ABANDONED:  # see ABANDONED: not ours to report any more
            log.warning("event=abandoned worker=%s job=%s attempt=%s (requeued once the "
                        "lease runs out)", self.name, outcome.job_id, outcome.attempt)
            self.executor.release([(outcome.job_id, outcome.attempt)])
            return
        self._pace.observe(seconds)
        self._unreported.ended(outcome)
        self._kick.set()

    def exchange(self) -> None:
        """One round with the database: report starts and ends (running the cycle), or
        just look for work; then start what was placed here.

        Jobs placed here by our own cycle come back with the report; jobs another
        process placed here, and cancels, come with a wake-up on our channel, which
        makes the round look at everything placed here (and every ``look_every``)."""
        assert self.worker_id is not None
        now = time.monotonic()
        look = self._woken.is_set() or now - self._looked >= self.look_every
        self._woken.clear()
        ended = self._unreported.take()  # and its starts (see worker/unreported.py)
        window = prefetch_window(self.capacity, self._pace.mean, self.prefetch)
        loaded = self.executor.busy() > 1  # more than a lone job since the last report
        declare = (window if self._pace.mean is not None
                   and worth_declaring(window, self._window, loaded=loaded) else None)
        if not ended and declare is None and not look and self._hold_starts(now):
            self._unreported.kept(ended)
            return
        self._hold_until = None
        taken = time.monotonic()
        starts = [Started(j, a, taken - t) for j, a, t in self._unreported.starts]
        # What we hold before the look: the listener may add jobs meanwhile, dispatched
        # after the look read the active set (see _take).
        held = self.executor.running()
        # The cycle runs when room may have opened (seed 000 runs schedule() on
        # completion; our start-up brings room too): not for starts alone, which free
        # nothing and would delay the report of the ends that follow them.
        first = self._place_first and look
        place = self.placer if ended or declare is not None or first else None
        if starts or ended or declare is not None or place is not None:
            try:
                report = report_batch(self.store, self.worker_id, starts, ended,
                                      prefetch=declare, place=place, fetch=look, known=held)
            except Exception:
                self._unreported.kept(ended)  # try again with the next round
                raise
            self._unreported.reported()
            if report.cycle is not None:  # else its holder places; we try on a later look
                self._place_first = False
            if declare is not None:
                self._window = declare
            self.stats["reports"] += 1
            self._count(ended, report.accepted)
            self.executor.release((o.job_id, o.attempt) for o in ended)
            assignment = report.assignment
        else:
            self._unreported.kept(ended)  # the starts held back, if any
            if not look:
                return
            assignment = self.store.attempts.fetch(self.worker_id, known=held)
        if look:
            self._looked = now
        self._take(assignment, held)

    def _hold_starts(self, now: float) -> bool:
        """Keep the starts unreported a little longer? While jobs are short (see
        :data:`START_HOLD`), until the oldest has waited that long."""
        mean = self._pace.mean
        if not self._unreported.starts or mean is None or mean >= START_HOLD:
            return False
        until = min(t for _, _, t in self._unreported.starts) + START_HOLD
        if now >= until:
            return False
        self._hold_until = until
        return True

    def _take(self, assignment: Assignment, held: Sequence[Key] = ()) -> None:
        """Start the new jobs; stop what we ``held`` before the assignment was read and
        is no longer ours (a job taken since is not in its active set, yet ours)."""
        if assignment.active is not None:
            for job_id, attempt in held:
                # Held then, and reported as ended since (released): nothing to stop.
                if ((job_id, attempt) not in assignment.active
                        and self.executor.stop(job_id, attempt)):
                    log.info("event=stop-attempt job=%s attempt=%s", job_id, attempt)
        if assignment.jobs:
            self._deliveries.taken((j.job_id, j.attempt) for j in assignment.jobs)
            self.stats["claimed"] += len(assignment.jobs)
            self.executor.submit(assignment.jobs)

    def _count(self, ended: Sequence[Outcome], accepted: Sequence[bool]) -> None:
        for outcome, ok in zip(ended, accepted, strict=True):
            if ok:
                self.stats["completed"] += 1
                continue
            self.stats["refused"] += 1
            if outcome.state == "canceled":  # stopped on being told (cancel, timeout,
                # requeue): the refusal is the expected end, not a problem
                jobs_log.info("event=job-stopped job=%s attempt=%s", outcome.job_id,
                              outcome.attempt)
            else:
                log.warning("event=completion-refused job=%s attempt=%s state=%s",
                            outcome.job_id, outcome.attempt, outcome.state)

    def _listen(self, stop: threading.Event) -> None:
        assert self.worker_id is not None
        listener = self._listener = self.store.listener(f"worker.{self.worker_id}")
        try:
            while not stop.is_set():  # looked at once _shutdown can see the listener
                try:
                    if not listener.wait(LISTEN_WAIT):
                        continue
                    if self._deliveries.add(listener.payloads()):
                        # Straight to the executor from this thread: a hop less.
                        self._take(Assignment(self._deliveries.take()))
                    else:
                        self._woken.set()
                        self._kick.set()
                except Exception as exc:  # a listener that failed reconnects on next wait
                    log.error("event=listen-failed worker=%s error=%s", self.name,
                              " ".join(str(exc).split())[:200])
                    stop.wait(0.5)
        finally:
            listener.close()

    def _shutdown(self, stop: threading.Event) -> None:
        stop.set()
        self._kick.set()
        if self._listener is not None:
            self._listener.interrupt()
        assert self.worker_id is not None
        if self.fenced:
            # Report what ended by itself: accepted while our lease holds (a self-fenced
            # worker stops before it runs out), refused — changing nothing — once not.
            self._try_flush()
            # Again: a job started while the fence went up was not marked yet.
            self.executor.stop_all(ABANDONED)
            self.executor.shutdown()
        else:
            # Seed 001: on SIGTERM suspend our jobs so they are requeued at once. Stop
            # the handlers first (SIGTERM, then SIGKILL after the grace) and wait for
            # them: until then a job must not start elsewhere, its locks still ours.
            # What they report is not an outcome (ABANDONED); what ended by itself is.
            self.executor.stop_all(ABANDONED)
            self.executor.shutdown()
            self._try_flush()
            # Our lease ends with stop_worker: a renewal refused from now on is our own
            # doing, not an expulsion (see Lease.heartbeat).
            self.lease.leaving.set()
            try:
                suspended = self.store.workers.stop(self.worker_id)
                log.info("event=worker-stopping worker=%s suspended=%d", self.name, suspended)
            except Exception:
                log.exception("event=stop-failed worker=%s (lease expiry will requeue)",
                              self.name)
        self.lease.leaving.set()
        log.info("event=worker-stopped worker=%s claimed=%d completed=%d refused=%d "
                 "reports=%d", self.name, self.stats["claimed"], self.stats["completed"],
                 self.stats["refused"], self.stats["reports"])

    def _try_flush(self) -> None:
        try:
            self._flush()
        except Exception as exc:
            log.error("event=flush-failed worker=%s error=%s", self.name,
                      " ".join(str(exc).split())[:200])

    def _flush(self) -> None:
        """Record the starts and ends not reported yet (no cycle, no new work)."""
        assert self.worker_id is not None
        if self.fenced:
            time.sleep(0.2)  # let slots that the fence just stopped hand in their outcome
        ended = self._unreported.take(every_start=True)
        now = time.monotonic()
        starts = [Started(j, a, now - t) for j, a, t in self._unreported.starts]
        if starts or ended:
            report = report_batch(self.store, self.worker_id, starts, ended)
            self._unreported.reported()
            self._count(ended, report.accepted)

    def _write_logs(self, chunks: Sequence[LogChunk]) -> set[Key]:
        assert self.worker_id is not None
        assert self.logs is not None
        return append_logs(self.store, self.worker_id, chunks, limit=self.logs.limit)

    def _logs_refused(self, key: Key) -> None:
        """Output refused: the attempt is not ours any more; end it like a fenced one."""
        log.warning("event=logs-refused worker=%s job=%s attempt=%s", self.name, *key)
        self.executor.stop(*key, state="error")

    def _report_stage(self, job_id: int, attempt: int, report: StageReport) -> bool:
        """Record a stage (fenced); a refusal stops the attempt. A database error is not a
        refusal: the stage is then not recorded and a later attempt runs it again."""
        assert self.worker_id is not None
        try:
            # A failed stage keeps its message where a finished one keeps its result.
            result = report.error if report.state == "failed" else report.result
            return self.store.stages.report(self.worker_id, job_id, attempt, report.name,
                                            report.state, result=result)
        except InvalidInput as exc:
            log.warning("event=stage-invalid job=%s attempt=%s error=%s", job_id, attempt, exc)
            return True
        except Exception as exc:
            log.error("event=stage-report-failed job=%s attempt=%s error=%s", job_id, attempt,
                      " ".join(str(exc).split())[:200])
            return True
