"""Backfill: a schedule's jobs for the ticks of a past range, as one graph.

One job per tick of ``[start, end)``, oldest first, each keyed as the schedule keys its
own ticks (``schedule:<name>:<tick>``, a unique index): a tick that has a job already —
the schedule's own, or an earlier backfill's — gets none, and of two backfills run at
once each tick goes to one. The jobs form a graph (routing ``backfill``), so that
``graph show`` follows it and ``graph cancel`` stops what remains; ``max_active``
chains them by ``always`` edges, each job after the one ``max_active`` places before
it: at most that many are pending, dispatched or running at once, whatever their
outcomes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.durations import iso
from taskyard.core.limits import COUNT_MAX, LimitError, whole
from taskyard.core.recurrence import tick_key
from taskyard.core.ticks import ticks_between
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JSON, JobSubmission
from taskyard.model.schedules import ScheduleRecord, following
from taskyard.store.driver.params import InsertJobs
from taskyard.store.schema.job_rows import job_row
from taskyard.store.transitions.dependents import chunks
from taskyard.store.transitions.events import graph_changed, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

ROUTING = "backfill"
"""The routing of a backfill's graph (its events' keys: ``taskyard.<graph>.backfill._``)."""
PER_STATEMENT = 1000


@dataclass(frozen=True, slots=True)
class Backfill:
    """What a backfill did (or, ``dry_run``, would do): the range's ticks, the graph and
    the jobs it created (in tick order), how many ticks had a job already."""

    schedule: str
    ticks: list[float]
    graph_id: int | None = None
    jobs: list[int] | None = None
    existing: int = 0

    def to_json(self) -> dict[str, JSON]:
        return {"schedule": self.schedule, "ticks": [iso(t) for t in self.ticks],
                "graph_id": self.graph_id, "jobs": self.jobs, "existing": self.existing}


class Backfills:
    """Backfills of schedules, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({"plan"})

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def plan(self, name: str, start: float, end: float) -> Backfill:
        """The ticks of schedule ``name`` in ``[start, end)``, oldest first (no write).
        InvalidInput for an adaptive schedule (no ticks), a reversed or future range, or
        more ticks than a graph holds."""
        record = self._schedule(name)
        where = f"backfill of schedule {name!r}"
        if record.kind == "adaptive":
            raise InvalidInput(f"{where}: an adaptive schedule has no ticks to backfill "
                               "(give it every or cron)")
        if not start < end:
            raise InvalidInput(f"{where}: --from ({iso(start)}) must be before --to "
                               f"({iso(end)})")
        now = self.tx.driver.read_now(self.tx.raw)
        if end > now + 1.0:
            raise InvalidInput(f"{where}: --to ({iso(end)}) is in the future; the schedule "
                               "runs its own ticks from now on")
        most = self.tx.store.limits.max_graph_tasks
        ticks = ticks_between(following(_row(record), past=True), start, end, most)
        if len(ticks) > most:
            raise InvalidInput(f"{where}: more than {most} ticks between {iso(start)} and "
                               f"{iso(end)}; backfill a shorter range at a time")
        return Backfill(name, ticks)

    def create(self, name: str, start: float, end: float, *, max_active: int | None = None,
               progress: Callable[[int, int], None] | None = None) -> Backfill:
        """Create the jobs of :meth:`plan`'s ticks that have none, as one graph; returns
        them. ``max_active``: at most that many of them pending, dispatched or running
        at once. ``progress(done, total)``: called as the rows are written."""
        if max_active is not None:
            try:
                whole(max_active, "--max-active", minimum=1, maximum=COUNT_MAX)
            except LimitError as exc:
                raise InvalidInput(str(exc)) from None
        plan = self.plan(name, start, end)
        if not plan.ticks:
            return Backfill(name, [], None, [], 0)
        record = self._schedule(name)
        tx = self.tx
        spec = tx.task_types.by_name({record.type})[record.type]
        graph_id = tx.driver.insert_graph(tx.raw, ROUTING, len(plan.ticks))
        rows = [job_row(JobSubmission(
            spec.name, record.args, record.priority, label=(iso(tick) or "").replace(".", ","),
            graph_id=graph_id, routing=f"{ROUTING}._", launch_type="backfill",
            schedule_name=name, dedup_key=tick_key(name, tick), logical_time=tick),
            spec, index) for index, tick in enumerate(plan.ticks)]
        columns = tuple(rows[0])
        created: list[tuple[float, int]] = []
        for part in chunks(list(zip(plan.ticks, rows, strict=True)), PER_STATEMENT):
            ids = tx.driver.insert_jobs(tx.raw, InsertJobs(
                columns, [tuple(row.values()) for _, row in part], len(part),
                skip_taken_keys=True)).ids
            created += [(tick, job) for (tick, _), job in zip(part, ids, strict=True)
                        if job is not None]
            if progress is not None:
                progress(len(created), len(plan.ticks))
        jobs = [job for _, job in created]
        if not jobs:
            tx.driver.drop_graph(tx.raw, graph_id)
            return Backfill(name, plan.ticks, None, [], len(plan.ticks))
        tx.driver.size_graph(tx.raw, graph_id, len(jobs))
        held = jobs[max_active:] if max_active is not None else []
        if held:  # each waits for the one max_active places before it, however it ends
            assert max_active is not None
            tx.driver.make_waiting(tx.raw, [(job, 1) for job in held])
            tx.driver.insert_edges(tx.raw, [(job, jobs[index], "always")
                                            for index, job in enumerate(held)])
        tx.events.append([graph_changed(graph_id, "running", ROUTING)])
        tx.events.append(job_pending(job, graph_id, f"{ROUTING}._", type=spec.name,
                                     schedule=name) for job in jobs[:len(jobs) - len(held)])
        tx.notify("scheduler")
        return Backfill(name, plan.ticks, graph_id, jobs, len(plan.ticks) - len(jobs))

    def cancel(self, name: str) -> int:
        """Cancel what remains of the schedule's backfills (their graphs: running jobs
        are stopped, the others canceled); how many jobs were canceled."""
        self._schedule(name)
        canceled = 0
        for graph_id in self.tx.driver.backfill_graphs(self.tx.raw, name):
            graph = self.tx.graphs.get(graph_id, jobs=False)
            try:
                self.tx.graphs.cancel(graph_id)
            except Conflict:  # ended meanwhile
                continue
            canceled += graph.jobs_total - graph.jobs_done
        return canceled

    def _schedule(self, name: str) -> ScheduleRecord:
        found = self.tx.schedules.get(name)
        if found is None:
            raise NotFound(f"no schedule {name!r}")
        return found


def _row(record: ScheduleRecord) -> dict[str, Any]:
    """The columns :func:`taskyard.model.schedules.following` reads."""
    return {"every": record.every, "cron": record.cron, "timezone": record.timezone,
            "next_run": record.next_run}
