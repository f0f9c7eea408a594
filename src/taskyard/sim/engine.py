"""The event loop: the real scheduling core, driven in virtual time.

Events (arrivals, ends of attempts, retry delays, crashes, lease expiries, schedule
ticks) are kept in one heap by time. After all the events of an instant, the simulator
runs what the daemons run in a cycle — requeue of suspended jobs, dependents of the jobs
that ended, then placement — calling the same functions of :mod:`taskyard.core`:
:class:`~taskyard.core.placement.Planner` over candidates merged by
:func:`~taskyard.core.candidates.merged`, and the decisions of
:mod:`taskyard.core.lifecycle`. The Planner lives for the whole run and is told what
changes, instead of being rebuilt from a snapshot at each instant.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from typing import Any

from taskyard.core.candidates import merged
from taskyard.core.lifecycle import after_attempt, may_start
from taskyard.core.locks import LockClaim, render_claims
from taskyard.core.placement import Candidate, Placement, Planner, SkipReason
from taskyard.core.retry import RetryPolicy
from taskyard.core.spread import spread
from taskyard.core.states import AttemptState, JobState
from taskyard.sim.arrivals import Arrivals
from taskyard.sim.dependents import Dependents
from taskyard.sim.faults import Faults
from taskyard.sim.metrics import Metrics
from taskyard.sim.model import PendingStream, SimJob, SimWorker
from taskyard.sim.periodic import Periodic
from taskyard.sim.rates import KeyedStream, SimRates, render_key
from taskyard.sim.scenario import Scenario
from taskyard.sim.specs import TypeSpec
from taskyard.sim.waits import SimWaits
from taskyard.sim.windows import declare_window

_PENDING, _DISPATCHED, _RUNNING = JobState.PENDING, JobState.DISPATCHED, JobState.RUNNING
_LOCKS = (SkipReason.LOCK_HELD, SkipReason.LOCK_WANTED_AHEAD)
_RATED = SkipReason.RATE_LIMITED
Trace = list[tuple[float, str, int, int, int]]
"""(time, what, job id, worker id, attempt): the simulation's events, in order."""


class Simulation:
    """One run of a scenario with a seed. :meth:`run` returns its :class:`Metrics`."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None,
                 trace: bool = False, keep_jobs: bool = False) -> None:
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        # One stream per purpose ("common random numbers"): another worker count or lock
        # changes the order of events, never which jobs arrive nor how long their first
        # attempts run; so two variants of a scenario compare like for like.
        self.rng = self.stream("attempts")
        """Later attempts, retry jitter, eventful results."""
        self.now = 0.0
        self.trace: Trace | None = [] if trace else None
        self.metrics = Metrics(scenario)
        self.live: dict[int, SimJob] = {}
        """Jobs created and not ended, by id."""
        self.jobs: dict[int, SimJob] | None = {} if keep_jobs else None
        """Every job, ended ones too (``keep_jobs``: for tests; a long run drops them)."""
        self.workers: dict[int, SimWorker] = {}
        self.pending = 0
        """Jobs pending and due (in the streams)."""
        self.ended: list[SimJob] = []
        """Jobs that ended at this instant: their dependents are resolved before the cycle."""
        self._events: list[tuple[float, int, Callable[[Any], None], Any, bool]] = []
        self._seq = 0
        self._foreground = 0
        self._next_job = 0
        self._streams: dict[tuple[str, ...], PendingStream | KeyedStream] = {}
        self._scan_limit = scenario.scheduler.scan_limit
        self._claims: dict[Any, tuple[LockClaim, ...]] = {}
        self._retry = {name: spec.retry for name, spec in scenario.types.items()}
        limits = {name: spec.max_queue_length for name, spec in scenario.types.items()
                  if spec.max_queue_length is not None}
        self.planner = Planner.from_snapshot([], [], limits)
        rates = {name: spec.rate_limit for name, spec in scenario.types.items()
                 if spec.rate_limit is not None}
        self.rates = SimRates(self.planner, self.later, rates) if rates else None
        """The rate limits, if a type has one."""
        # The helpers see the run through SimContext, and each other only as wired here
        # (the lambda: self.arrivals is built below).
        self.waits = SimWaits(self)
        self.dependents = Dependents(self, lambda job: self.arrivals.ended(job),  # noqa: PLW0108
                                     self.waits)
        self.faults = Faults(self)
        self.arrivals = Arrivals(self, self.dependents)
        self.periodic = Periodic(self)

    def stream(self, purpose: str) -> random.Random:
        """The random stream of ``purpose`` for this run's seed."""
        return random.Random(f"{self.seed}:{purpose}")

    # -- the event queue ---------------------------------------------------------------

    def later(self, when: float, handler: Callable[[Any], None], arg: Any = None, *,
              background: bool = False) -> None:
        """Call ``handler(arg)`` at virtual time ``when``. The run ends when only
        background events (crashes, samples, aging) remain."""
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, handler, arg, not background))
        if not background:
            self._foreground += 1

    def note(self, what: str, job: int, worker: int = 0, attempt: int = 0) -> None:
        """Record an event in the trace, if one is kept."""
        if self.trace is not None:
            self.trace.append((self.now, what, job, worker, attempt))

    def run(self) -> Metrics:
        """Simulate until no work is left (or the scenario's ``stop``)."""
        self.faults.start_workers()
        self.arrivals.start()
        self.periodic.start()
        events, pop, stop = self._events, heapq.heappop, self.scenario.stop
        faults, planner = self.faults, self.planner
        while events and self._foreground > 0:
            now = events[0][0]
            if stop is not None and now > stop:
                break
            self.now = now
            while events and events[0][0] == now:
                _, _, handler, arg, foreground = pop(events)
                if foreground:
                    self._foreground -= 1
                handler(arg)
            # What a cycle does after the instant's events: requeue suspended jobs,
            # resolve the dependents of ended ones, place pending ones.
            if faults.suspended:
                faults.requeue()
            if self.ended:
                self.dependents.resolve()
            if self.pending and not planner.exhausted():
                self._place()
        self.metrics.awaiting = self.waits.report(self.now)
        self.metrics.close(self.now, self.live.values(),
                           None if self.rates is None else self.rates.stats)
        return self.metrics

    # -- jobs ---------------------------------------------------------------------------

    def new_job(self, spec: TypeSpec, args: dict[str, Any], priority: int,
                pools: tuple[str, ...] | None = None, *, extra_locks: tuple[str, ...] = (),
                retries: int | None = None, timeout: float | None = None,
                claims: tuple[LockClaim, ...] | None = None,
                rng: random.Random | None = None) -> SimJob:
        """A job, created now (still waiting: :meth:`release` or give it parents).
        ``claims``: its locks as recorded (else rendered from the type's templates);
        ``rng``: its arrival's stream, which draws its first attempt now."""
        self._next_job += 1
        retry = self._retry.get(spec.name, spec.retry)  # an approval's, a wait's: none
        if retries is not None and retries != retry.retries:
            retry = RetryPolicy(retries, retry.delay, retry.backoff, retry.max_delay)
        if claims is None:
            claims = self._claims_of(spec, args, extra_locks)
        job = SimJob(self._next_job, spec, args, priority, pools=pools or spec.pools,
                     claims=claims, now=self.now, retry=retry,
                     timeout=spec.timeout if timeout is None else timeout,
                     rate_key=None if spec.rate_key is None else render_key(spec, args))
        if rng is not None:
            job.first = self._draw(spec, args, rng)
        self.live[job.id] = job
        if self.jobs is not None:
            self.jobs[job.id] = job
        self.metrics.created_job(job)
        if self.trace is not None:
            self.note("create", job.id)
        return job

    def _claims_of(self, spec: TypeSpec, args: dict[str, Any],
                   extra: tuple[str, ...]) -> tuple[LockClaim, ...]:
        if spec.simultaneous and not spec.locks and not extra:
            return ()
        try:
            key: Any = (spec.name, extra, tuple(args.items()))  # one order per arrival
            hash(key)
        except TypeError:  # an arg value that is a list or a mapping
            key = None
        claims = self._claims.get(key) if key is not None else None
        if claims is None:
            claims = render_claims(spec.name, spec.locks, args,
                                   simultaneous=spec.simultaneous, extra=extra)
            if key is not None:
                self._claims[key] = claims
        return claims

    def release(self, job: SimJob, run_after: float | None = None) -> None:
        """The job becomes pending: due now, or at ``run_after`` (a retry's delay)."""
        job.state = _PENDING
        job.unmet = 0
        job.run_after = run_after
        if not job.listed:
            self.periodic.listed(job)
        if run_after is not None and run_after > self.now:
            self.later(run_after, self._due, job)
            return
        if job.ready is None:
            job.ready = self.now
        self._enqueue(job)

    def _due(self, job: SimJob) -> None:
        if job.state is _PENDING:
            if job.ready is None:
                job.ready = self.now
            self._enqueue(job)

    def _enqueue(self, job: SimJob) -> None:
        stream = self._streams.get(job.pools)
        if stream is None:
            stream = self._streams[job.pools] = (
                PendingStream(job.pools) if self.rates is None
                else KeyedStream(job.pools, self.rates))
        stream.push(job)
        self.pending += 1
        self.metrics.pending_by_type[job.type.name] += 1

    def requeue(self, job: SimJob) -> None:
        """Priority changed (aging): a new place in its stream (the old one is stale)."""
        self._streams[job.pools].push(job)

    def finish(self, job: SimJob, state: JobState) -> None:
        """The job ended in ``state`` (terminal)."""
        job.state = state
        job.finished = self.now
        del self.live[job.id]
        self.metrics.finished(job, self.now)
        if self.trace is not None:
            self.note(f"end:{state.value}", job.id)
        if (job.children is not None or job.graph is not None or job.schedule is not None
                or job.type.name in self.dependents.tracked):
            self.ended.append(job)  # its end matters to others: see Dependents.resolve

    # -- placement and execution -------------------------------------------------------

    def _place(self) -> None:
        """Placement, as the cycle does it: candidates merged from the pools lists that
        have room, offered in order until no worker can take more; the Planner consults
        the cycle's rate limits (see :mod:`taskyard.sim.rates`)."""
        planner, rates = self.planner, self.rates
        planner.forget_ahead()
        streams = [s for s in self._streams.values() if s.heap]
        live, workers, metrics = self.live, self.workers, self.metrics
        skipped = False
        wanted = None if rates is None else rates.open(self.now)
        placed: list[tuple[Candidate, int]] = []
        for cand in merged(streams, planner.has_room, self._scan_limit, wanted):
            decision = planner.offer(cand)
            if isinstance(decision, Placement):
                placed.append((cand, decision.worker_id))
                if planner.exhausted():
                    break
                continue
            job = live[cand.id]
            skipped = True
            if decision.reason in _LOCKS:
                metrics.blocked(job, decision.detail, self.now)
            elif decision.reason is _RATED and rates is not None:
                rates.refused(job)
            if self.trace is not None:
                self.note(f"skip:{decision.reason.value}", job.id)
            if planner.exhausted():
                break
        # Dispatched once the cycle has decided, as the daemons' cycle writes its
        # placements: what it takes back to spread a burst stays pending (core.spread).
        back = set() if planner.exhausted() else {p.job_id for p in spread(planner, placed)}
        for cand, worker_id in placed:
            if cand.id not in back:
                self._dispatch(live[cand.id], workers[worker_id])
        for stream in streams:
            stream.end_cycle(skipped or bool(back))  # what it read and left waits
        if rates is not None:
            rates.close()

    def _dispatch(self, job: SimJob, worker: SimWorker) -> None:
        job.state = _DISPATCHED
        job.attempt += 1
        job.worker = worker
        worker.jobs[job.id] = job
        self.pending -= 1
        self.metrics.pending_by_type[job.type.name] -= 1
        if self.trace is not None:
            self.note("dispatch", job.id, worker.id, job.attempt)
        if not worker.alive:
            return  # crashed, not expelled yet: the job waits there until it is
        if not worker.queue and may_start(worker.executing, worker.used, job.cost,
                                          worker.capacity):
            self._start(job, worker)  # nothing queued ahead of it
            return
        heapq.heappush(worker.queue, (-job.priority, job.id, job))
        self.start_queued(worker)

    def start_queued(self, worker: SimWorker) -> None:
        """Start the worker's queued jobs, in placement order, while they fit."""
        queue = worker.queue
        while queue:
            job = queue[0][2]
            if job.state is not _DISPATCHED or job.worker is not worker:
                heapq.heappop(queue)
                continue
            if not may_start(worker.executing, worker.used, job.cost, worker.capacity):
                return
            heapq.heappop(queue)
            self._start(job, worker)

    def _start(self, job: SimJob, worker: SimWorker) -> None:
        now = self.now
        if worker.used:  # worker.account(now), inlined
            worker.busy += min(worker.used, worker.capacity) * (now - worker.last)
        worker.last = now
        worker.executing += 1
        worker.used += job.cost
        self.metrics.running += 1
        job.state = _RUNNING
        job.attempt_started = now
        if job.started is None:
            job.started = now
            self.metrics.started(job, now)
            if self.rates is not None and job.type.rate_limit is not None:
                self.rates.first_start(job, now)
        if self.trace is not None:
            self.note("start", job.id, worker.id, job.attempt)
        seconds, job.outcome = self._attempt(job)
        self.later(now + seconds, self._end, (job, job.attempt))

    def _attempt(self, job: SimJob) -> tuple[float, AttemptState]:
        """How long this attempt runs and how it ends (a timeout is a failure)."""
        recorded = job.recorded
        if recorded is not None:
            seconds, outcome = recorded[min(job.attempt, len(recorded)) - 1]
        elif job.first is not None:
            (seconds, outcome), job.first = job.first, None
        else:
            seconds, outcome = self._draw(job.type, job.args, self.rng)
        if job.timeout is not None and seconds > job.timeout:
            return job.timeout, AttemptState.FAILED
        return seconds, outcome

    @staticmethod
    def _draw(spec: TypeSpec, args: dict[str, Any],
              rng: random.Random) -> tuple[float, AttemptState]:
        seconds = spec.duration.sample(rng, args)
        failed = spec.fail > 0 and rng.random() < spec.fail
        return seconds, AttemptState.FAILED if failed else AttemptState.SUCCEEDED

    def _end(self, ending: tuple[SimJob, int]) -> None:
        job, attempt = ending
        worker = job.worker
        if job.attempt != attempt or job.state is not _RUNNING or worker is None or (
                not worker.alive):
            return  # fenced: the attempt was lost with its worker or timed out
        self.leave_worker(job, worker)
        worker.pace.observe(self.now - job.attempt_started)
        self.end_attempt(job, job.outcome)
        declare_window(self.planner, self.workers, worker)
        self.start_queued(worker)

    def leave_worker(self, job: SimJob, worker: SimWorker) -> None:
        """The job no longer occupies the worker: capacity, queue count, locks free."""
        if job.state is _RUNNING and worker.alive:
            worker.account(self.now)
            worker.executing -= 1
            worker.used -= job.cost
            self.metrics.running -= 1
        del worker.jobs[job.id]
        job.worker = None
        self.planner.release(job.id, job.type.name, worker.id, job.cost, job.claims)

    def end_attempt(self, job: SimJob, outcome: AttemptState) -> None:
        """The job's state after an attempt (off its worker already) ended in
        ``outcome``: retried after its delay, or ended."""
        failed = outcome in (AttemptState.FAILED, AttemptState.ERROR)
        jitter = self.rng.random() if failed else 0.0
        decision = after_attempt(outcome, job.retry, job.failures, jitter)
        job.failures += failed
        if self.trace is not None:
            self.note(f"attempt:{outcome.value}", job.id, 0, job.attempt)
        if decision.state is _PENDING:
            self.release(job, self.now + decision.delay)
        else:
            if job.schedule is not None and job.type.eventful is not None:
                job.eventful = self.rng.random() < job.type.eventful
            self.finish(job, decision.state)

