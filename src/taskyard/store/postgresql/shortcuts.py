"""PostgreSQL: the guesses behind a lone submit's shortcuts (see postgresql/jobs.py).

A lone submit that finds the queue idle places its job from a snapshot a cycle would
read (a **basis**): its dispatch runs only if the snapshot, read under the lock, reads
as that basis's text (:data:`MATCH`). Up to three bases are guessed, each with the
worker the planner gives the job from it, and the one the snapshot reads as picks the
worker:

- the one a cycle read with nothing pending but the submit's own job (``basis``): it
  holds again once every job placed since has ended — a worker idle between submits;
- the one after the last placement, every job placed since still running (``ahead``):
  the basis that placement went by, with the job added to its worker's row — a busy
  worker given one job after another. Without it such a submit never found its basis
  (each placement changed the snapshot): its guarded dispatch placed nothing, then its
  cycle placed the job, one submit in two (``bench.lone_submits``);
- the one after the last placement, that job alone still running (``last``): jobs that
  take about as long as the time between submits.

Their texts are written here as PostgreSQL writes the snapshot's JSON
(``cycle.SNAPSHOT_TEXT``): where that cannot be told for sure (the order of a new row
among a worker's rows of other types follows the database's collation) there is none.
A text written wrongly only fails to match: the statement checks every guess.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taskyard.store.cursor import json_rows
from taskyard.store.driver.cycle_params import CycleReads, Snapshot
from taskyard.store.driver.planning import planner_of, planner_values, to_candidates
from taskyard.store.driver.wakeup_payloads import WAKEUP_BYTES
from taskyard.store.postgresql import cycle
from taskyard.store.postgresql.listen import pg_channel

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
    grown: dict[tuple[Any, ...], Basis | None] = field(
        default_factory=dict, compare=False, repr=False)
    """:func:`advance`'s answers kept (``keep``), by the job's type, cost and locks and
    its worker: the ``basis`` of Shortcuts grows the same ``last`` submit after submit."""


@dataclass(frozen=True, slots=True)
class Guess:
    """A basis the snapshot may read as, and the worker (id, name) the planner gives the
    submit's job from it."""

    basis: Basis
    worker_id: int
    name: str


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
        """The snapshot after the last placement of a lone submit here, every job placed
        since ``basis`` still running."""
        self.last: Basis | None = None
        """The same, the last job placed the only one still running."""
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
        self.ahead = self.last = None

    def choose(self, columns: tuple[str, ...], row: tuple[Any, ...]) -> list[Guess]:
        """The guesses for the job of ``row`` (each basis from which a cycle would place
        it, once each text): none when it is not a job for this shortcut."""
        guesses: list[Guess] = []
        for basis in (self.ahead, self.last, self.basis):
            if basis is None or any(g.basis.text == basis.text for g in guesses):
                continue
            found = planned(basis, columns, row)
            if found is not None:
                guesses.append(Guess(basis, *found))
        return guesses

    def placed(self, guess: Guess, columns: tuple[str, ...], row: tuple[Any, ...]) -> None:
        """The job of ``row`` was placed by ``guess`` (the one the snapshot read as)."""
        kept = self.basis
        self.ahead = advance(guess.basis, columns, row, guess.worker_id,
                             keep=guess.basis is kept)  # a worker idle between submits
        self.last = None if kept is None or kept is guess.basis else advance(
            kept, columns, row, guess.worker_id, keep=True)

    def refused(self) -> None:
        """The snapshot read as none of the guesses: the next submit's cycle reads
        afresh."""
        self.basis = self.ahead = self.last = None

    def to_be_placed(self, columns: tuple[str, ...], row: tuple[Any, ...]) -> None:
        """The job of ``row`` was inserted with the queue idle, and :meth:`learn` made
        ``basis`` of the reads: the cycle the submit runs next places it as the planner
        does from them, and the snapshot reads as ``ahead`` after."""
        kept = self.basis
        on_kept = None if kept is None else planned(kept, columns, row)
        if kept is not None and on_kept is not None:
            self.ahead = advance(kept, columns, row, on_kept[0], keep=True)


MATCH = (
    # A lone submit's guesses at what a cycle would read now, checked once its insert
    # took the lock (a statement of its own after the insert:
    # its snapshot is taken then): the lock is ours, no other job is pending, no
    # maintenance step has work, and the snapshot reads as one of the texts. The one it
    # reads as picks the dispatch's row (its worker, as decided from that text).
    f"SELECT set_config('{cycle.MATCHED_SETTING}', COALESCE(CASE WHEN current_setting("
    f"'{cycle.HELD_SETTING}', true) = 'on' AND NOT EXISTS (SELECT 1 FROM jobs WHERE "
    "state = 'pending' AND id <> currval(pg_get_serial_sequence('jobs', 'id'))) "
    f"AND {cycle.NO_MAINTENANCE} THEN CASE {cycle.SNAPSHOT_TEXT} WHEN %(b1)s THEN '1' "
    "WHEN %(b2)s THEN '2' WHEN %(b3)s THEN '3' END END, ''), true)")
"""SQL: which guess holds (``cycle.MATCHED_SETTING``), returned as well (named
parameters ``b1``-``b3``, the texts, and ``grace``)."""


def guessed_params(guesses: Sequence[tuple[str, int, str]], grace: float, *,
                   pend: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Parameters of :data:`MATCH` and ``cycle.DISPATCH`` for the job the statement before
    them inserted, and a lone submit's guesses (at most 3): each the text the snapshot
    would read as, and the worker (id, name) the planner gives the job from it.
    ``grace``: the timeouts' grace; ``pend``: the pipeline is its unit's whole
    transaction, and the dispatch wakes the scheduler if the job stays pending."""
    texts: list[str | None] = [text for text, _, _ in guesses]
    texts += [None] * (3 - len(texts))
    rows = [(None, w, name, pg_channel(f"worker.{w}"), True, str(k))
            for k, (_, w, name) in enumerate(guesses, 1)]
    return ({"b1": texts[0], "b2": texts[1], "b3": texts[2], "grace": grace},
            {"rows": json_rows(rows), "most": WAKEUP_BYTES, "events": "[]", "last": True,
             "guessed": True, "pend": pend})


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
            worker_id: int, *, keep: bool = False) -> Basis | None:
    """``basis`` once the job of ``row`` is dispatched to ``worker_id``: its text as the
    snapshot then reads. None for a job with locks (a row of its own, ordered by the
    locks' text), or a first job of its type on a worker running others (ordered by
    the types' names in the database's collation). ``keep``: the answer is kept in
    ``basis.grown`` — only for the long-lived ``basis`` of Shortcuts, which then gives
    the same ``ahead`` (and its planner's answers) submit after submit while its worker
    is idle between them; kept by each ``ahead``, the chain of them would grow for as
    long as the worker stays busy."""
    job = dict(zip(columns, row, strict=True))
    key = (job["type"], job["cost"], job["locks"], worker_id)
    if key in basis.grown:
        return basis.grown[key]
    grown = _grown(basis, job["type"], int(job["cost"]), job["locks"], worker_id)
    if keep and len(basis.grown) < _PLANS_KEPT:
        basis.grown[key] = grown
    return grown


def _grown(basis: Basis, type_: str, cost: int, locks: str | None,
           worker_id: int) -> Basis | None:
    if locks not in (None, "[]"):
        return None
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
