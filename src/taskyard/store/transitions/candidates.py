"""The cycle's candidates: pending jobs of one pools list, read page by page; the
lists are merged into placement order by :func:`taskyard.core.candidates.merged`."""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskyard.core.placement import Candidate
from taskyard.store.driver.planning import pools_of

if TYPE_CHECKING:
    from taskyard.store.transitions.cycle import CycleTx


@dataclass(slots=True)
class Stream:
    """Pending jobs of one pools list, read page by page from the placement index as
    the merge asks for them (a :class:`taskyard.core.candidates.CandidateStream`)."""

    tx: CycleTx
    text: str
    pools: tuple[str, ...]
    page: int
    skip: Callable[[], Collection[tuple[str, str]]] = frozenset
    """(type, rate key) out of budget now: their jobs are left out of the pages read."""
    buffer: collections.deque[Candidate] = field(default_factory=collections.deque)
    after: tuple[int, int] | None = None
    done: bool = False
    first: list[Candidate] | None = None
    """The first page, when it was read with the pools lists (PostgreSQL)."""
    first_page: int = 0
    """The size ``first`` was read with (a list shorter than that has no more)."""

    def peek(self) -> Candidate | None:
        if not self.buffer and not self._fill():
            return None
        return self.buffer[0]

    def take(self) -> Candidate:
        return self.buffer.popleft()

    def _fill(self) -> bool:
        """Read the next page; False when the list has nothing more."""
        if self.done:
            return False
        if self.first is not None:
            batch, self.first = self.first, None
            self.done = len(batch) < self.first_page
        else:
            batch = self.tx.candidates(self.text, self.after, self.page, self.skip())
            self.done = len(batch) < self.page
        if batch:
            self.after = (batch[-1].priority, batch[-1].id)
            self.buffer.extend(batch)
        return bool(batch)


def streams(tx: CycleTx, lists: list[str], first: list[Candidate] | None, *,
            first_page: int, page: int,
            skip: Callable[[], Collection[tuple[str, str]]] = frozenset) -> list[Stream]:
    """One stream per pools list in ``lists``; ``first``: the first list's first page,
    when it was read ahead (with ``first_page`` rows at most); ``skip()``: see Stream."""
    return [Stream(tx, text, pools_of(text), page, skip, first=first if n == 0 else None,
                   first_page=first_page) for n, text in enumerate(lists)]
