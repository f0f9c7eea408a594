"""Update on launch: spawn or reuse prerequisite jobs while submitting a job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import select

from taskyard.core.limits import LimitError, encode_args
from taskyard.core.prerequisites import (
    IN_FLIGHT,
    PrerequisiteError,
    PriorRun,
    Reuse,
    decide,
    render_args,
)
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import schema as t

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_J = t.jobs


@dataclass
class PrereqPlan:
    """For each submission index: the job ids it must wait on, and new jobs to spawn."""

    waits: dict[int, list[int]] = field(default_factory=dict)
    spawn: list[JobSubmission] = field(default_factory=list)
    spawn_waiters: list[list[int]] = field(default_factory=list)
    """For each spawned submission, the submission indexes that wait on it."""


class Prerequisites:
    """Update on launch (seed 000), in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def plan(self, subs: Sequence[JobSubmission],
             specs: Mapping[str, TaskTypeSpec]) -> PrereqPlan:
        """For each submission whose type has prerequisites: reuse a fresh or in-flight
        run, or spawn one (shared by the submissions that need the same)."""
        conn = self.tx.conn
        plan = PrereqPlan()
        spawned: dict[tuple[str, str], int] = {}
        now: float | None = None
        for index, sub in enumerate(subs):
            spec = specs.get(sub.type)  # none for an approval, a wait or a sleep
            if spec is None or not spec.prerequisites or sub.launch_type == "dependent":
                continue
            if now is None:
                now = float(conn.execute(select(self.tx.now)).scalar_one())
            for prereq in spec.prerequisites:
                where = f"job {index} ({sub.type}) prerequisite {prereq.type!r}"
                try:
                    args = render_args(prereq.args, sub.args, where=where)
                    args_text = encode_args(args, where=where)
                except (PrerequisiteError, LimitError) as exc:
                    raise InvalidInput(str(exc)) from None
                key = (prereq.type, args_text)
                if key in spawned:
                    plan.spawn_waiters[spawned[key]].append(index)
                    continue
                # Concurrent launches needing the same prerequisite decide one after
                # the other.
                self.tx.driver.serialize_on(self.tx.raw, f"prereq:{prereq.type}:{args_text}")
                choice = decide(self._prior_runs(prereq.type, args_text, prereq.cache),
                                cache=prereq.cache, now=now)
                if isinstance(choice, Reuse):
                    if choice.wait:
                        plan.waits.setdefault(index, []).append(choice.job_id)
                    continue
                spawned[key] = len(plan.spawn)
                plan.spawn.append(JobSubmission(type=prereq.type, args=args,
                                                priority=sub.priority, launch_type="dependent"))
                plan.spawn_waiters.append([index])
        return plan

    def _prior_runs(self, type_: str, args_text: str, cache: float) -> list[PriorRun]:
        query = (
            select(_J.c.id, _J.c.state, _J.c.finished_at)
            .where(_J.c.type == type_, _J.c.state.in_(IN_FLIGHT), _J.c.args == args_text)
            .order_by(_J.c.id.desc()).limit(1)
        )
        # Lock the run we may wait on: its completion (which reads our new edge to
        # decrement us) must wait for this transaction, or it misses the edge and we
        # wait forever. If it completed first, the lock returns nothing here.
        flying = self.tx.conn.execute(self.tx.driver.lock_rows(query)).all()
        recent = self.tx.conn.execute(
            select(_J.c.id, _J.c.state, _J.c.finished_at)
            .where(_J.c.type == type_, _J.c.state == "succeeded",
                   _J.c.finished_at >= self.tx.now - cache, _J.c.args == args_text)
            .order_by(_J.c.finished_at.desc()).limit(1)
        ).all()
        return [PriorRun(r.id, r.state, r.finished_at) for r in (*flying, *recent)]


