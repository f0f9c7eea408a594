"""Stage reports from workers (fenced), and the results a later attempt resumes from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.stages import (
    STAGE_STATES,
    StageError,
    check_stage_name,
    encode_stage_result,
)
from taskyard.model.errors import InvalidInput
from taskyard.model.records import loads
from taskyard.store.driver.params import ReportStage
from taskyard.store.transitions.dependents import chunks

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

class Stages:
    """Stages of attempts, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset()
    """Methods a call through the store (``store.stages.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def report(
        self, worker_id: int, job_id: int, attempt: int, name: str, state: str, *,
        result: Any = None,
    ) -> bool:
        """Record that a stage began (``running``) or ended (``succeeded``/``failed``).

        Fenced like a completion: accepted (True) only while ``attempt`` is the job's
        current attempt, running on this worker under a valid lease; otherwise
        nothing changes (False) and the worker should stop the attempt.
        """
        try:
            check_stage_name(name)
            if state not in STAGE_STATES:
                raise StageError(f"stage {name!r}: unknown state {state!r}")
            text = None if result is None else encode_stage_result(name, result)
        except StageError as exc:
            raise InvalidInput(str(exc)) from None
        return self.tx.driver.report_stage(self.tx.raw, ReportStage(
            worker_id, job_id, attempt, name, state, text))

    def finished(self, jobs: Sequence[tuple[int, int]]) -> dict[int, dict[str, Any]]:
        """For (job, attempt) pairs: results of the stages earlier attempts finished."""
        retried = {job: attempt for job, attempt in jobs if attempt > 1}
        found: dict[int, dict[str, Any]] = {}
        for part in chunks(sorted(retried)):
            for job, attempt, name, result in self.tx.driver.finished_stages(self.tx.raw, part):
                if attempt < retried[job]:  # later attempts' results win
                    found.setdefault(job, {})[name] = loads(result)
        return found
