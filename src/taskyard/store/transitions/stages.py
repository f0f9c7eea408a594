"""Stage reports from workers (fenced), and the results a later attempt resumes from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import bindparam, exists, func, insert, select, update

from taskyard.core.stages import (
    STAGE_STATES,
    StageError,
    check_stage_name,
    encode_stage_result,
)
from taskyard.core.states import ACTIVE
from taskyard.model.errors import InvalidInput
from taskyard.model.records import loads
from taskyard.store import schema as t
from taskyard.store.sql import lit, lits
from taskyard.store.transitions.dependents import chunks

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_S, _J, _W = t.stages, t.jobs, t.workers


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
        conn = self.tx.conn
        # Dispatched counts too: the worker records starts in batches, so a stage may
        # be reported before the start of its attempt is.
        current = (select(_J.c.id).where(
            _J.c.id == job_id, _J.c.attempt == attempt, _J.c.state.in_(lits(ACTIVE)),
            _J.c.worker_id == worker_id,
            exists().where(_W.c.id == worker_id, _W.c.state == lit("active"),
                           _W.c.lease_expires_at >= self.tx.now)))
        # Hold off a concurrent expel or cancel until we commit.
        current = self.tx.driver.lock_rows(current, shared=True)
        if conn.execute(current).first() is None:
            return False
        key = (_S.c.job_id == job_id, _S.c.attempt == attempt, _S.c.name == name)
        ends = state != "running"
        values: dict[str, Any] = {"state": state, "result": text,
                                  "finished_at": self.tx.now if ends else None}
        if not ends:
            values["started_at"] = self.tx.now
        if conn.execute(update(_S).where(*key).values(**values)).rowcount == 0:
            seq = conn.execute(select(func.count()).select_from(_S).where(
                _S.c.job_id == job_id, _S.c.attempt == attempt)).scalar_one()
            conn.execute(insert(_S).values(job_id=job_id, attempt=attempt, name=name,
                                           seq=int(seq) + 1, started_at=self.tx.now,
                                           **{k: v for k, v in values.items()
                                              if k != "started_at"}))
        return True

    def finished(self, jobs: Sequence[tuple[int, int]]) -> dict[int, dict[str, Any]]:
        """For (job, attempt) pairs: results of the stages earlier attempts finished."""
        retried = {job: attempt for job, attempt in jobs if attempt > 1}
        found: dict[int, dict[str, Any]] = {}
        for part in chunks(sorted(retried)):
            rows = self.tx.conn.execute(self.tx.statement("stages.finished", lambda: (
                select(_S.c.job_id, _S.c.attempt, _S.c.name, _S.c.result)
                .where(_S.c.job_id.in_(bindparam("ids", expanding=True)),
                       _S.c.state == lit("succeeded"))
                .order_by(_S.c.job_id, _S.c.attempt)
            )), {"ids": list(part)})
            for r in rows:
                if r.attempt < retried[r.job_id]:  # later attempts' results win
                    found.setdefault(r.job_id, {})[r.name] = loads(r.result)
        return found
