"""What the worker's loop drives: an executor, which runs the jobs placed on the worker.

The loop (:class:`~taskyard.worker.daemon.WorkerDaemon`) owns everything that talks to
the database — registration, the lease and its heartbeat, self-fencing, the batched
reports, the look at what is placed here, the stop path. An executor only runs
attempts and says when each one starts and ends. Two implement it:

- :class:`~taskyard.worker.process_executor.ProcessExecutor`: handlers in child
  processes (``taskyard worker``);
- :class:`~taskyard.bridges.celery_executor.CeleryExecutor`: Celery tasks run by an
  existing Celery fleet (``taskyard celery-pool``).

The contract, whatever runs the jobs:

- An attempt handed to :meth:`Executor.submit` is *held* until the loop
  :meth:`~Executor.release`\\ s it, after reporting its outcome; :meth:`~Executor.running`
  lists the held attempts (the heartbeat sends them: the store answers which to stop).
- Every attempt that started produces exactly one outcome through
  :attr:`Hooks.on_done`; its start is listed by :meth:`~Executor.take_started` before
  its outcome is handed in, so that the loop, taking the starts again after the ends,
  never reports an end without its start (worker/unreported.py). An attempt dropped
  before it started produces none.
- :meth:`~Executor.stop` ends an attempt with a given state; :meth:`~Executor.stop_all`
  every one, and no job is taken any more (the worker leaves or is fenced). An outcome
  whose state is :data:`ABANDONED` is not the attempt's end: the loop does not report
  it (see :data:`ABANDONED`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from taskyard.core.stages import StageReport
from taskyard.model.records import ClaimedJob, Outcome

Key = tuple[int, int]
"""(job id, attempt): one attempt."""

ABANDONED = "abandoned"
"""Stop state of the attempts a leaving or fenced worker gives up. Their outcomes are
not reported: a fenced worker gave its lease up, so they end as a lost worker's do
(lease expiry, then the scheduler requeues them); a leaving one suspends its jobs as it
leaves. Reported as errors, they would be accepted if the database came back before
the lease ran out, failing jobs for a hiccup of the database."""

StageSink = Callable[[int, int, StageReport], bool]
"""Records a stage report of (job, attempt); False means refused (fenced)."""


@dataclass(frozen=True)
class Hooks:
    """How an executor tells the loop what happened (called from the executor's threads)."""

    on_done: Callable[[Outcome, float | None], None]
    """An attempt ended: its outcome, and how many seconds it ran (None: a handler's
    first run in its child, whose time is not its pace: see core.prefetch)."""
    on_start: Callable[[], None]
    """An attempt started (the loop collects it with :meth:`Executor.take_started`)."""
    on_stage: StageSink
    """A handler reported a stage."""


class Executor(Protocol):
    """Runs attempts for the worker's loop (see the module docstring for the contract)."""

    worker_name: str
    """The name of the worker it runs for (a handler sees it as ``TASKYARD_WORKER``)."""

    def submit(self, jobs: Iterable[ClaimedJob]) -> None:
        """Take jobs (in placement order); ignored once :meth:`stop_all` ran. Called from
        more than one thread."""

    def stop(self, job_id: int, attempt: int, *, state: str = "canceled") -> bool:
        """End that attempt with ``state`` (dropped without an outcome if it has not
        started). False when it is not held."""

    def stop_all(self, state: str = "error", *, grace: float | None = None) -> None:
        """Stop every attempt held and take no more jobs. ``grace``: at most this many
        seconds for a handler to end before it is killed (a fenced worker's lease runs)."""

    def release(self, keys: Iterable[Key]) -> None:
        """Forget attempts whose outcome the loop has reported."""

    def take_started(self) -> list[tuple[int, int, float]]:
        """(job, attempt, monotonic start) of the attempts started since the last call."""

    def running(self) -> list[Key]:
        """Every attempt held: not started yet, running, or ended and not released."""

    def busy(self) -> int:
        """How many attempts are held."""

    def queued(self) -> int:
        """How many attempts are held and not started yet."""

    def shutdown(self, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop the executor's threads (stopping every attempt first with ``kill``)."""


ExecutorFactory = Callable[[Hooks], Executor]
"""Builds the executor of a worker, wired to its loop's hooks."""
