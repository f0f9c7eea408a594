"""Update on launch: spawn or reuse prerequisite jobs while submitting a job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, select, text

from taskyard.core.limits import LimitError, encode_args
from taskyard.core.prerequisites import (
    IN_FLIGHT,
    PrerequisiteError,
    PriorRun,
    Reuse,
    decide,
    render_args,
)
from taskyard.store import schema as t
from taskyard.store.base import StoreBase
from taskyard.store.errors import InvalidInput
from taskyard.store.records import JobSubmission, TaskTypeSpec

_J = t.jobs


@dataclass
class PrereqPlan:
    """For each submission index: the job ids it must wait on, and new jobs to spawn."""

    waits: dict[int, list[int]] = field(default_factory=dict)
    spawn: list[JobSubmission] = field(default_factory=list)
    spawn_waiters: list[list[int]] = field(default_factory=list)
    """For each spawned submission, the submission indexes that wait on it."""


class PrereqMixin(StoreBase):
    def _plan_prerequisites(
        self, conn: Connection, subs: Sequence[JobSubmission], specs: Mapping[str, TaskTypeSpec]
    ) -> PrereqPlan:
        plan = PrereqPlan()
        spawned: dict[tuple[str, str], int] = {}
        now: float | None = None
        for index, sub in enumerate(subs):
            spec = specs[sub.type]
            if not spec.prerequisites or sub.launch_type == "dependent":
                continue
            if now is None:
                now = float(conn.execute(select(self._now)).scalar_one())
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
                self._serialize_on(conn, f"prereq:{prereq.type}:{args_text}")
                choice = decide(self._prior_runs(conn, prereq.type, args_text, prereq.cache),
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

    def _serialize_on(self, conn: Connection, key: str) -> None:
        """Concurrent launches needing the same prerequisite decide one after the other."""
        if not self.sqlite:  # SQLite write transactions are serial already
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
                         {"k": key})

    def _prior_runs(self, conn: Connection, type_: str, args_text: str,
                    cache: float) -> list[PriorRun]:
        query = (
            select(_J.c.id, _J.c.state, _J.c.finished_at)
            .where(_J.c.type == type_, _J.c.state.in_(IN_FLIGHT), _J.c.args == args_text)
            .order_by(_J.c.id.desc()).limit(1)
        )
        if not self.sqlite:
            # Lock the run we may wait on: its completion (which reads our new edge to
            # decrement us) must wait for this transaction, or it misses the edge and we
            # wait forever. If it completed first, the lock returns nothing here.
            query = query.with_for_update()
        flying = conn.execute(query).all()
        recent = conn.execute(
            select(_J.c.id, _J.c.state, _J.c.finished_at)
            .where(_J.c.type == type_, _J.c.state == "succeeded",
                   _J.c.finished_at >= self._now - cache, _J.c.args == args_text)
            .order_by(_J.c.finished_at.desc()).limit(1)
        ).all()
        return [PriorRun(r.id, r.state, r.finished_at) for r in (*flying, *recent)]


