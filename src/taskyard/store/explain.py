"""Why a job is where it is: replays the cycle's placement up to that job."""

from __future__ import annotations

from sqlalchemy import select

from taskyard.core.durations import iso
from taskyard.core.explain import Reason, from_decision
from taskyard.core.placement import Planner
from taskyard.core.states import ACTIVE, TERMINAL, JobState
from taskyard.store import schema as t
from taskyard.store.cycle import SCAN_LIMIT, CycleStore, CycleTx, pools_of
from taskyard.store.errors import NotFound

_J, _D = t.jobs, t.dependencies


class ExplainMixin(CycleStore):
    def explain_job(self, job_id: int) -> list[Reason]:
        """Reasons a job is not running (empty once it runs or ended)."""
        with self._read() as conn:
            job = conn.execute(
                select(_J.c.state, _J.c.run_after, _J.c.priority, _J.c.worker_id, _J.c.pools)
                .where(_J.c.id == job_id)
            ).first()
            if job is None:
                raise NotFound(f"no job {job_id}")
            state = JobState(job.state)
            if state in TERMINAL or state in ACTIVE:
                return []
            if state is JobState.SUSPENDED:
                return [Reason("suspended", "its worker was lost; the next cycle requeues it")]
            if state is JobState.WAITING:
                return [
                    Reason("dependency", f"waits for job {r.id}"
                           f"{f' ({r.label})' if r.label else ''} of type {r.type}, "
                           f"which is {r.state}", r.id, r.condition)
                    for r in conn.execute(
                        select(_J.c.id, _J.c.label, _J.c.type, _J.c.state, _D.c.condition)
                        .join(_D, _D.c.requires_id == _J.c.id)
                        .where(_D.c.job_id == job_id, _J.c.state.not_in(TERMINAL))
                        .order_by(_J.c.id)
                    )
                ]
            now = float(conn.execute(select(self._now)).scalar_one())
            if job.run_after is not None and job.run_after > now:
                return [Reason("run_after", f"not due before {iso(job.run_after)} "
                               f"(in {job.run_after - now:.0f}s)")]
            # Replay the cycle's placement, with its stopping rules, up to this job.
            tx = CycleTx(self, conn)
            workers = tx.workers()
            limits = tx.queue_limits()
            planner = Planner.from_snapshot(workers, tx.active_jobs(), limits)
            names = {w.id: w.name for w in workers}
            pools = pools_of(job.pools)
            ahead = 0
            if not planner.exhausted():
                for candidate in tx.ordered_candidates(planner.has_room, 1000, SCAN_LIMIT):
                    decision = planner.offer(candidate)
                    if candidate.id == job_id:
                        return [from_decision(decision, ahead=ahead, worker_names=names,
                                              queue_limit=limits.get(candidate.type))]
                    ahead += 1
                    if planner.exhausted():
                        break
        if not any(pool in w.pools for w in workers for pool in pools):
            return [Reason("no_worker", f"no live worker serves its pools ({', '.join(pools)})",
                           detail=",".join(pools))]
        if not planner.has_room(pools) or planner.exhausted():
            return [Reason("no_capacity", f"no worker in its pools ({', '.join(pools)}) has "
                           f"room for it; {ahead} job(s) ahead in line are placed first",
                           detail=",".join(pools))]
        return [Reason("far_in_line", f"more than {ahead} jobs are ahead of it in line")]
