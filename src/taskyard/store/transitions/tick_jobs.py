"""The jobs of one cycle's due ticks, as their schedules' overlap policy lets them be:
the rows to insert, the ticks dropped (each a ``schedule-skipped`` event saying why),
and the jobs queued behind their schedule's previous one (``buffer-one``: an ``always``
edge, so that the queued job runs once the previous ends, however it ends).

The previous job's row is locked before its state decides (``Cursor.row_lock``): its
end, reported at the same moment, either commits first (and is seen: the tick runs at
once) or waits for this transaction, then finds the new edge when it resolves its
dependents. A job never waits behind one that ended unseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from taskyard.core.durations import iso
from taskyard.core.ticks import Overlap, OverlapAction, overlap_action, overlap_reason
from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.store.schema.job_rows import job_row
from taskyard.store.transitions.events import schedule_error, schedule_skipped

if TYPE_CHECKING:
    from taskyard.core.recurrence import TickPlan
    from taskyard.store.unit import Tx

TICK_SKIPPED = "skipped: invalid job"
"""last_outcome when a tick's job could not be built (reason in a schedule-error event)."""


class TickJobs:
    """The rows of due ticks, schedule by schedule (:meth:`add`), then what their
    insert leaves to do (:meth:`queue_behind`)."""

    def __init__(self, tx: Tx, submission: Any) -> None:
        """``submission(m, spec, tick)``: a tick's JobSubmission (schedule_runs.py)."""
        self.tx = tx
        self.rows: list[dict[str, Any]] = []
        self._submission = submission
        self._behind: dict[str, int | str] = {}
        """Per tick key queued behind the previous job: that job's id, or the tick key of
        the previous row of this cycle."""

    def add(self, m: Any, spec: TaskTypeSpec, plan: TickPlan) -> None:
        """The ticks ``plan`` gives the schedule of row ``m`` (claimed already), as its
        overlap policy lets them run; the dropped ones announced."""
        name = m["name"]
        events = self.tx.events
        events.append(schedule_skipped(name, d.first, d.last, d.count, d.reason, more=d.more)
                      for d in plan.dropped)
        policy = Overlap(m["overlap"])
        previous: int | str | None = m["last_job_id"]
        which = f"job {previous}"
        state = None
        if policy is not Overlap.ALLOW and plan.ticks and m["last_job_id"] is not None:
            state = self.tx.driver.lock_run(self.tx.raw, m["last_job_id"])
        for tick in plan.ticks:
            action = overlap_action(policy, state)
            if action is OverlapAction.SKIP:
                assert state is not None
                events.append([schedule_skipped(name, tick, tick, 1,
                                                overlap_reason(policy, which, state))])
                continue
            try:
                row = job_row(self._submission(m, spec, tick), spec, 0)
            except InvalidInput as exc:
                # The type changed under the schedule (e.g. a lock template wants an
                # arg it lacks): skip the tick, keep the schedule, say why.
                self.tx.driver.note_outcome(self.tx.raw, name, TICK_SKIPPED)
                events.append([schedule_error(name, tick, str(exc))])
                break
            if action is OverlapAction.BUFFER:
                assert previous is not None
                self._behind[row["dedup_key"]] = previous
            self.rows.append(row)
            previous, which = row["dedup_key"], f"the job of {iso(tick)}"
            state = "waiting" if action is OverlapAction.BUFFER else "pending"

    def queue_behind(self, inserted: Sequence[tuple[Any, ...]]) -> set[int]:
        """After the insert (``inserted``: id, schedule, type, tick key): the jobs that
        wait for their schedule's previous job; their ids."""
        if not self._behind:
            return set()
        ids = {key: int(job) for job, _, _, key in inserted}
        edges: list[tuple[int, int]] = []
        for key, previous in self._behind.items():
            before = previous if isinstance(previous, int) else ids.get(previous)
            if key in ids and before is None:  # taken already (a backfill's job)
                before = self.tx.driver.job_of_key(self.tx.raw, str(previous))
            if key in ids and before is not None:
                edges.append((ids[key], before))
        driver, raw = self.tx.driver, self.tx.raw
        driver.queue_behind(raw, [job for job, _ in edges])
        driver.insert_edges(raw, [(job, before, "always") for job, before in edges])
        return {job for job, _ in edges}


__all__ = ["TICK_SKIPPED", "TickJobs"]
