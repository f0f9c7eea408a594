"""What a worker has not reported yet: the attempts its executor started and ended since
its last report, taken so that a report never carries an end without its start.

An end whose start the database has not recorded finds its job dispatched, not running,
and is refused (fencing cannot tell it from a stale report); the start, recorded by a
later report, would then leave the job running for good, its worker idle."""

from __future__ import annotations

import collections
from collections.abc import Callable

from taskyard.model.records import Outcome

Start = tuple[int, int, float]
"""An attempt that started: job, attempt, monotonic time of the start."""


class Unreported:
    """The starts and ends a worker's next report carries. The executor's threads add
    ends (:meth:`ended`); the worker's loop takes a report's worth (:meth:`take`), then
    says whether it was recorded (:meth:`reported`, :meth:`kept`)."""

    def __init__(self, take_started: Callable[[], list[Start]]) -> None:
        self._take_started = take_started
        self._ends: collections.deque[Outcome] = collections.deque()
        self.starts: list[Start] = []
        """The starts of the report being made (after :meth:`take`), or not reported."""
        self._later: list[Start] = []

    def ended(self, outcome: Outcome) -> None:
        """An attempt ended (called from the executor's threads)."""
        self._ends.append(outcome)

    def ends(self) -> int:
        """How many ends wait to be reported."""
        return len(self._ends)

    def take(self, *, every_start: bool = False) -> list[Outcome]:
        """The ends to report now; :attr:`starts` then holds the starts to report with
        them. Starts are taken before ends, so that a report never shows a job in the
        room of one whose end it does not carry (the executor hands an end in before it
        frees the room). A job may start and end between the two (a short job, this
        thread preempted): the starts are taken again after the ends, and the starts
        of the jobs ending go with their ends; the others wait for the next report
        (``every_start``: they go too — a last report, when rooms no longer matter)."""
        self.starts += self._take_started()
        ended = [self._ends.popleft() for _ in range(len(self._ends))]
        ending = {(o.job_id, o.attempt) for o in ended}
        for start in self._take_started():
            now = every_start or (start[0], start[1]) in ending
            (self.starts if now else self._later).append(start)
        return ended

    def reported(self) -> None:
        """The report taken was recorded: only the starts held back remain."""
        self.starts, self._later = self._later, []

    def kept(self, ended: list[Outcome]) -> None:
        """The report taken was not made (or failed): everything waits for the next."""
        self._ends.extendleft(reversed(ended))
        self.starts += self._later
        self._later = []
