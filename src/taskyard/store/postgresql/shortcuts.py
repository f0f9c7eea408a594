"""PostgreSQL: the guesses behind a lone submit's shortcuts (see postgresql/jobs.py).

A lone submit that finds the queue idle places its job from a snapshot a cycle read
earlier under the lock (a **basis**), and its dispatch runs only while the snapshot still
reads as that basis's text. Two bases are kept:

- the one a cycle read with nothing pending but the submit's own job (**kept**): it
  holds again once every job placed since has ended — a worker idle between submits;
- the one the snapshot reads after the last placement (**ahead**): the basis that
  placement was decided from, with the job added to its worker's load. It holds while
  the jobs placed since run on — a busy worker given one job after another. Without it
  such a submit never found its basis (each placement changed the snapshot) and paid a
  guarded dispatch that placed nothing, then a cycle (half of 150 lone submits to a
  worker whose jobs ran on; see docs/architecture.md).

The text of ``ahead`` is written here as PostgreSQL writes the snapshot's JSON
(``cycle.SNAPSHOT_TEXT``): where that cannot be told for sure (the order of a new row
among a worker's rows of other types follows the database's collation) there is no
``ahead``. A text written wrongly only fails to match: the statement checks every guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from taskyard.store.driver.cycle_params import CycleReads, Snapshot
from taskyard.store.driver.planning import planner_of, planner_values, to_candidates

_PLANS_KEPT = 64
"""Answers kept per basis at most (jobs locking keys of their own differ each)."""


@dataclass(frozen=True, slots=True)
class Basis:
    """A snapshot of the cycle's (``cycle.SNAPSHOT_TEXT``), as text and parsed."""

    text: str
    snapshot: Snapshot
    plans: dict[tuple[Any, ...], tuple[int, str] | None] = field(
        default_factory=dict, compare=False, repr=False)
    """:func:`planned`'s answers from this basis, by the job's placement fields: a
    basis that holds serves one submit after another (the planner's 16 us each)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """A submit's placement from its bases: the worker (id, name), and the bases under
    which it holds (the dispatch checks the snapshot reads as one of their texts)."""

    worker_id: int
    name: str
    bases: tuple[Basis, ...]

    @property
    def texts(self) -> tuple[str, ...]:
        """The bases' texts, as the dispatch takes them."""
        return tuple(b.text for b in self.bases)


class Shortcuts:
    """The guesses behind the lone submit's shortcuts. The store's threads share them:
    each reads and replaces a whole value (no two fields that must agree), and any value
    is correct, the statements check it."""

    def __init__(self) -> None:
        self.no_worker = False
        """The last lone submit here found no live worker."""
        self.basis: Basis | None = None
        """The last reads of the cycle here, under its lock, with the queue idle."""
        self.ahead: Basis | None = None
        """The snapshot as it reads after the last placement of a lone submit here."""
        self.lead_ahead = False
        """When the two bases place a job differently: try ``ahead`` (the last such
        try on ``basis`` failed), else ``basis``."""
        self.submits = False
        """A lone submit that places its job was made here: a cycle that finds nothing
        pending reads the snapshot all the same, as the next one's basis. (A worker or
        a scheduler that submits nothing does not: that part of the reads grows with
        the fleet, and nothing else uses it when there is nothing to place.)"""

    def learn(self, reads: CycleReads, text: str | None, job_id: int | None = None) -> None:
        """Reads made under the lock (``job_id``: right after that job's insert); ``text``
        None: without the snapshot."""
        first = reads.first or []
        idle = not reads.lists or (job_id is not None and len(reads.lists) == 1
                                   and len(first) == 1 and first[0][0] == job_id)
        self.basis = (Basis(text, reads.snapshot)
                      if idle and text is not None and reads.snapshot is not None else None)
        self.ahead = None

    def choose(self, columns: tuple[str, ...], row: tuple[Any, ...]) -> Choice | None:
        """Where the job of ``row`` goes, if a cycle finding either basis would place it
        there (both texts when both agree), else None."""
        kept, ahead = self.basis, self.ahead
        on_kept = None if kept is None else planned(kept, columns, row)
        on_ahead = None if ahead is None else planned(ahead, columns, row)
        if kept is not None and ahead is not None and on_kept is not None \
                and on_kept == on_ahead:
            return Choice(*on_kept, (ahead, kept))
        if ahead is not None and on_ahead is not None and (self.lead_ahead or on_kept is None):
            return Choice(*on_ahead, (ahead,))
        if kept is not None and on_kept is not None:
            return Choice(*on_kept, (kept,))
        return None

    def placed(self, choice: Choice, matched: int, columns: tuple[str, ...],
               row: tuple[Any, ...]) -> None:
        """The job of ``row`` was placed as ``choice`` said, the snapshot reading as its
        text ``matched`` (1-based, as the statement says)."""
        source = choice.bases[matched - 1]
        self.lead_ahead = source is self.ahead
        self.ahead = advance(source, columns, row, choice.worker_id)

    def refused(self, choice: Choice) -> None:
        """The dispatch found the snapshot read as none of ``choice``'s texts: the next
        submit's cycle reads afresh, and the other basis leads when they disagree."""
        if len(choice.bases) == 1:
            self.lead_ahead = choice.bases[0] is not self.ahead
        self.basis = self.ahead = None

    def to_be_placed(self, columns: tuple[str, ...], row: tuple[Any, ...]) -> None:
        """The job of ``row`` was inserted with the queue idle, and :meth:`learn` made
        ``basis`` of the reads: the cycle the submit runs next places it as the planner
        does from them, and the snapshot reads as ``ahead`` after."""
        kept = self.basis
        on_kept = None if kept is None else planned(kept, columns, row)
        if kept is not None and on_kept is not None:
            self.ahead = advance(kept, columns, row, on_kept[0])


def planned(basis: Basis, columns: tuple[str, ...],
            row: tuple[Any, ...]) -> tuple[int, str] | None:
    """The worker (id, name) a cycle that finds ``basis`` and the job of ``row`` alone
    pending would place it on: the planner's decision (core/placement.py). None when
    that cycle needs more than ``basis`` (a job for later or of a graph, a rate-limited
    type) or places nothing."""
    job = dict(zip(columns, row, strict=True))
    if job["run_after"] is not None or job["graph_id"] is not None:
        return None
    fields = (job["type"], job["priority"], job["pools"], job["cost"], job["locks"],
              job["rate_key"])
    if fields in basis.plans:
        return basis.plans[fields]
    from taskyard.core.placement import Placement  # noqa: PLC0415 - start-up time

    workers, active, limits = planner_values(basis.snapshot)
    found = None
    if job["type"] not in limits.rates:
        (candidate,) = to_candidates([(0, *fields)])
        decision = planner_of(workers, active, limits.queue, None).offer(candidate)
        if isinstance(decision, Placement):
            found = next((w.id, w.name) for w in workers if w.id == decision.worker_id)
    if len(basis.plans) < _PLANS_KEPT:
        basis.plans[fields] = found
    return found


def advance(basis: Basis, columns: tuple[str, ...], row: tuple[Any, ...],
            worker_id: int) -> Basis | None:
    """``basis`` once the job of ``row`` is dispatched to ``worker_id``: its text as the
    snapshot then reads. None for a job with locks (a row of its own, ordered by the
    locks' text), or a first job of its type on a worker running others (ordered by
    the types' names in the database's collation)."""
    job = dict(zip(columns, row, strict=True))
    if job["locks"] not in (None, "[]"):
        return None
    type_, cost = job["type"], int(job["cost"])
    rows = list(basis.snapshot.active)
    mine = [i for i, r in enumerate(rows) if r[2] == worker_id]
    same = next((i for i in mine if rows[i][0] == 0 and rows[i][1] == type_
                 and rows[i][4] == "[]"), None)
    if same is not None:
        holder, _, worker, total, locks, count = rows[same]
        rows[same] = [holder, type_, worker, total + cost, locks, count + 1]
    elif mine:
        return None
    else:  # the rows go by worker id first
        at = next((i for i, r in enumerate(rows) if r[2] > worker_id), len(rows))
        rows.insert(at, [0, type_, worker_id, cost, "[]", 1])
    snapshot = basis.snapshot
    # What json_build_array and json_agg write: ", " between items, null for none.
    text = json.dumps([snapshot.workers or None, rows, snapshot.limits or None,
                       snapshot.paused or None], ensure_ascii=False)
    return Basis(text, Snapshot(snapshot.workers, rows, snapshot.limits, snapshot.paused))
