"""The Python interpreters of a :class:`~taskyard.worker.process_executor.ProcessExecutor`'s
slots: one per slot, started on demand (or ahead of the first job), replaced once ended.
With live output (a :class:`~taskyard.worker.log_pump.LogPump`), each writes its stdout
and stderr to two files the pump reads while a job runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from taskyard.worker.guardian import Guardian
from taskyard.worker.log_pump import Key, LogPump
from taskyard.worker.processes import PythonChild


class ChildSlots:
    """Slot ``index``'s child: :meth:`get` (a live one), :meth:`current` (as it stands),
    :meth:`drop` (end it)."""

    def __init__(self, count: int, *, guardian: Guardian | None,
                 logs: LogPump | None) -> None:
        self.guardian = guardian
        self.logs = logs
        self._children: list[PythonChild | None] = [None] * count

    def __iter__(self) -> Iterator[PythonChild | None]:
        return iter(list(self._children))

    def prewarm(self, index: int) -> None:
        """Start slot ``index``'s interpreter now, so that even its first job finds it warm."""
        self._children[index] = self._new()

    def current(self, index: int) -> PythonChild | None:
        return self._children[index]

    def get(self, index: int) -> PythonChild:
        """Slot ``index``'s child, a new one if it has none alive."""
        child = self._children[index]
        if child is None or not child.is_alive():
            if child is not None:
                child.discard()
            child = self._children[index] = self._new()
        return child

    def watch(self, child: PythonChild, key: Key) -> Callable[[], None] | None:
        """Have the pump read what attempt ``key``, about to run in ``child`` (a slot's,
        from :meth:`get`), writes; returns what to call once it ended (None: no live
        output)."""
        if self.logs is None or child.output is None:
            return None
        child.empty_output()
        return self.logs.watch(key, *child.output)

    def drop(self, index: int, grace: float, *,
             before_discard: Callable[[], None] | None = None) -> None:
        """End slot ``index``'s child (``grace`` seconds between SIGTERM and SIGKILL);
        ``before_discard`` runs once it is dead, before its output files go."""
        child, self._children[index] = self._children[index], None
        if child is not None:
            child.kill(grace)
        if before_discard is not None:
            before_discard()
        if child is not None:
            child.discard()

    def close(self) -> None:
        for child in self._children:
            if child is not None:
                child.close()

    def _new(self) -> PythonChild:
        return PythonChild(self.guardian, output=self.logs is not None)
