"""Bulk actions: cancel or retry every job a search finds (``POST
/api/v1/jobs/bulk/{action}``, the Jobs page's buttons). Each job goes through the same
transition as alone (its guard, its event, its dependents), ``BATCH`` jobs per write
transaction; a job that changed state meanwhile (ended before its cancel, retried by
someone else) is skipped and counted.

The set is the search's, in creation order, restricted to the states the action
applies to, up to the newest job a count showed (``up_to``): jobs submitted after the
operator confirmed the count are left alone. At most ``MOST`` jobs a call (``more``
says some are left: call again)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from taskyard.core.states import FAILURES, TERMINAL, JobState
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.store.reads.job_search import JobQuery, Position, search_jobs

if TYPE_CHECKING:
    from taskyard.store import Store

BATCH = 200
"""Jobs per write transaction: short enough not to hold the writers back."""
MOST = 10_000
"""Jobs one call acts on at most."""
APPLIES = {"cancel": tuple(s.value for s in JobState if s not in TERMINAL),
           "retry": tuple(s.value for s in JobState if s in FAILURES)}
"""The states each action changes."""


@dataclass(frozen=True, slots=True)
class BulkResult:
    action: str
    matched: int
    """Jobs found (in the states the action applies to, up to ``up_to``)."""
    changed: int
    skipped: int
    """Found, but changed state before their turn (refused, nothing done)."""
    up_to: int | None
    """The newest job id of the set (send it back to act on what was counted)."""
    more: bool
    """Stopped at ``MOST``: more jobs match."""

    def to_json(self, *, dry_run: bool) -> dict[str, Any]:
        """The answer of ``POST /api/v1/jobs/{action}`` and of ``jobs cancel|retry --json``."""
        return {"action": self.action, "dry_run": dry_run, "matched": self.matched,
                "changed": self.changed, "skipped": self.skipped, "up_to": self.up_to,
                "more": self.more}


def matching_ids(store: Store, action: str, query: JobQuery, *, up_to: int | None = None,
                 most: int = MOST) -> tuple[list[int], bool]:
    """The ids of the jobs ``action`` would change, oldest first, and whether more match
    beyond ``most``."""
    if action not in APPLIES:
        raise InvalidInput(f"action: {action!r} is not one of {', '.join(APPLIES)}")
    query.check()
    states = tuple(s for s in (query.states or APPLIES[action]) if s in APPLIES[action])
    if not states:
        return [], False
    walk = replace(query, states=states, sort="created")  # creation order: ids only grow
    ids: list[int] = []
    after: Position | None = None
    while True:
        page = search_jobs(store, walk, after=after, limit=1000)
        for job in page.items:
            if up_to is not None and job.id > up_to:
                return ids, False
            if len(ids) == most:
                return ids, True
            ids.append(job.id)
        if page.next is None:
            return ids, False
        after = page.next


def act_on_jobs(store: Store, action: str, query: JobQuery, *, up_to: int | None = None,
                dry_run: bool = False, most: int = MOST) -> BulkResult:
    """Cancel or retry (``action``) the jobs ``query`` finds; ``dry_run``: count only."""
    ids, more = matching_ids(store, action, query, up_to=up_to, most=most)
    top = max(ids) if ids else up_to
    changed = skipped = 0
    if not dry_run:
        for start in range(0, len(ids), BATCH):
            with store.write() as tx:
                for job_id in ids[start:start + BATCH]:
                    try:
                        if action == "cancel":
                            tx.jobs.cancel(job_id)
                        else:
                            tx.retries.retry(job_id)
                        changed += 1
                    except (Conflict, NotFound):
                        skipped += 1
    return BulkResult(action, len(ids), changed, skipped, top, more)
