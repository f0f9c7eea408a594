"""Update on launch: spawn or reuse prerequisite jobs while submitting a job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskyard.core.limits import LimitError, encode_args
from taskyard.core.prerequisites import (
    PrerequisiteError,
    PriorRun,
    Reuse,
    decide,
    render_args,
)
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store.driver.params import ReadPriorRuns

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



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
        plan = PrereqPlan()
        spawned: dict[tuple[str, str], int] = {}
        now: float | None = None
        for index, sub in enumerate(subs):
            spec = specs[sub.type]
            if not spec.prerequisites or sub.launch_type == "dependent":
                continue
            if now is None:
                now = self.tx.driver.read_now(self.tx.raw)
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
                # the other (see ReadPriorRuns).
                runs = self.tx.driver.read_prior_runs(
                    self.tx.raw, ReadPriorRuns(prereq.type, args_text, prereq.cache))
                choice = decide([PriorRun(*r) for r in runs], cache=prereq.cache, now=now)
                if isinstance(choice, Reuse):
                    if choice.wait:
                        plan.waits.setdefault(index, []).append(choice.job_id)
                    continue
                spawned[key] = len(plan.spawn)
                plan.spawn.append(JobSubmission(type=prereq.type, args=args,
                                                priority=sub.priority, launch_type="dependent"))
                plan.spawn_waiters.append([index])
        return plan
