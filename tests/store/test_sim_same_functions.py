"""The simulator runs the scheduling core, not a copy of it: fed the same workers, task
types and jobs, a real cycle on a real store (both backends) and the simulator decide
the same placements and skips, and every function of taskyard.core that the real
cycle, completions and graph resolution call for those decisions, the simulator calls
too (observed with a profiler hook, whatever the import style)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml
from driver import drive

from taskyard.model.records import ClaimedJob, JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.sim import parse_scenario, simulate
from taskyard.store import MovableClock, Store

CORE = str(Path(__file__).parents[2] / "src" / "taskyard" / "core")
WORKERS = [("small", ["a"], 2), ("big", ["a", "b"], 4), ("bee", ["b"], 1)]
TYPES = {
    "t1": {"pools": ["a", "b"], "locks": ["p:{p}"]},
    "t2": {"pools": ["b"], "cost": 2, "locks": ["p:{p}:shared"], "max_queue_length": 2},
    "t3": {"pools": ["a"], "cost": 3, "simultaneous": False},
}
JOBS = [("t1", 0, 1), ("t2", 0, 1), ("t2", 5, 2), ("t1", 5, 2), ("t3", 0, 1),
        ("t3", 0, 1), ("t2", 1, 1), ("t1", 1, 1), ("t2", 0, 3), ("t1", 9, 3),
        ("t3", 2, 2), ("t2", 0, 4), ("t1", 0, 4), ("t2", 3, 5), ("t1", 0, 5)]

# What the real cycle calls and the simulator need not, deciding nothing: the page of
# candidates sized from the workers' room (how many rows to read at once: I/O; the
# simulator reads no pages), and the copy of the planner kept for the same workers that
# a cycle starts from (it holds what a planner built from the snapshot holds:
# tests/unit/test_planner_loaded.py; the simulator keeps one planner for its whole run).
NOT_DECIDING = {"placement.Planner.idle", "placement.Planner.room", "placement.Planner.free",
                "placement.WorkerSlot.budget", "placement.Planner.loaded",
                "placement.Planner.loaded.<locals>.<dictcomp>",
                "placement.Planner.loaded.<locals>.<setcomp>", "affinity.AffinityIndex.copy",
                "affinity.AffinityIndex.copy.<locals>.<dictcomp>"}


@contextmanager
def core_calls() -> Iterator[set[str]]:
    """The qualified names of the taskyard.core functions called meanwhile."""
    seen: set[str] = set()

    def hook(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(CORE):
            module = Path(frame.f_code.co_filename).stem
            seen.add(f"{module}.{frame.f_code.co_qualname}")

    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(None)


def _types(store: Store, types: dict[str, dict[str, Any]]) -> None:
    for name, body in types.items():
        fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in body.items()
                  if k not in ("duration", "fail")}
        store.task_types.put(TaskTypeSpec(name, "python:nowhere:nothing", **fields))


def test_one_cycle_places_and_skips_as_the_real_one(store: Store) -> None:
    _types(store, TYPES)
    for name, pools, capacity in WORKERS:
        store.workers.register(name, pools, capacity, lease_seconds=300)
    ids = store.jobs.submit([JobSubmission(t, {"p": p}, priority) for t, priority, p in JOBS])
    with core_calls() as real_calls:
        report = schedule(store)
    assert report is not None
    names = {w.id: w.name for w in store.workers.list()}
    order = {job_id: n for n, job_id in enumerate(ids)}
    real_placed = sorted((order[p.job_id], names[p.worker_id]) for p in report.placed)
    real_skipped = [(order[s.job_id], s.reason.value) for s in report.skipped]

    doc = {"workers": {name: {"capacity": capacity, "pools": pools, "prefetch": 0}
                       for name, pools, capacity in WORKERS},
           "task_types": {n: {**b, "duration": "1h"} for n, b in TYPES.items()},
           "arrivals": [{"type": t, "at": 0, "priority": priority, "args": {"p": p}}
                        for t, priority, p in JOBS]}
    with core_calls() as sim_calls:
        result = simulate(parse_scenario(doc), trace=True, keep_jobs=True)
    assert result.trace is not None
    sim_names = {w.id: f"{w.name.rsplit('-', 1)[0]}" for w in result.simulation.workers.values()}
    first = [e for e in result.trace if e[0] == 0.0]
    sim_placed = sorted((job - 1, sim_names[worker]) for _, what, job, worker, _ in first
                        if what == "dispatch")
    sim_skipped = [(job - 1, what.removeprefix("skip:")) for _, what, job, _, _ in first
                   if what.startswith("skip:")]
    assert sim_placed == real_placed
    assert sim_skipped == real_skipped
    assert len(real_placed) >= 4 and {r for _, r in real_skipped} >= {
        "lock_held", "lock_wanted_ahead", "queue_full", "no_capacity"}
    deciding = {f for f in real_calls if f.startswith(("placement.", "affinity."))} - NOT_DECIDING
    assert {"placement.Planner.offer", "affinity.AffinityIndex.choose"} <= deciding
    assert deciding <= sim_calls, deciding - sim_calls


RATED = {
    "mail": {"pools": ["a", "b"], "rate_limit": "2/m", "rate_key": "t:{p}"},
    "sync": {"pools": ["a"], "rate_limit": "1/m"},
    "t1": {"pools": ["a", "b"], "locks": ["p:{p}"]},
}
# (type, priority, p, pools): mail of key t:1 in two pools lists, so that one of them is
# read before its key runs out and refused by the Planner (the rest are passed over).
RATED_JOBS = [("mail", 0, 1, None), ("mail", 5, 1, None), ("mail", 0, 1, ("b",)),
              ("mail", 0, 1, None), ("sync", 0, 1, None), ("mail", 1, 2, None),
              ("t1", 0, 1, None), ("sync", 3, 1, None), ("mail", 0, 2, None),
              ("mail", 0, 2, None), ("t1", 0, 2, None), ("mail", 0, 1, ("b",))]


def _real_cycle(store: Store, order: dict[int, int]) -> tuple[list[int], list[tuple[int, str]]]:
    report = schedule(store)
    assert report is not None
    return (sorted(order[p.job_id] for p in report.placed),
            [(order[s.job_id], s.reason.value) for s in report.skipped])


def test_rate_limits_are_decided_by_the_same_functions(store: Store,
                                                       clock: MovableClock) -> None:
    _types(store, RATED)
    for name, pools, _ in WORKERS:
        store.workers.register(name, pools, 20, lease_seconds=1e6)
    ids = store.jobs.submit([JobSubmission(t, {"p": p}, priority, pools=pools)
                             for t, priority, p, pools in RATED_JOBS])
    order = {job_id: n for n, job_id in enumerate(ids)}
    with core_calls() as real_calls:
        real = [_real_cycle(store, order)]
    clock.advance(61)  # every window has moved on: the keys' budgets are whole again
    real.append(_real_cycle(store, order))

    doc = {"workers": {name: {"capacity": 20, "pools": pools, "prefetch": 0}
                       for name, pools, _ in WORKERS},
           "task_types": {n: {**b, "duration": "1h"} for n, b in RATED.items()},
           "arrivals": [{"type": t, "at": 0, "priority": priority, "args": {"p": p},
                         **({"pools": list(pools)} if pools else {})}
                        for t, priority, p, pools in RATED_JOBS]}
    with core_calls() as sim_calls:
        result = simulate(parse_scenario(doc), trace=True, keep_jobs=True)
    assert result.trace is not None
    sim = []
    for instant in (0.0, 60.0):  # the cycle at 60 s: the first refused key reopens then
        here = [e for e in result.trace if e[0] == instant]
        sim.append((sorted(job - 1 for _, what, job, _, _ in here if what == "dispatch"),
                    [(job - 1, what.removeprefix("skip:")) for _, what, job, _, _ in here
                     if what.startswith("skip:")]))
    assert sim == real
    assert ("rate_limited" in {r for _, r in real[0][1]}) and len(real[1][0]) >= 3
    deciding = {f for f in real_calls if f.startswith(("placement.", "rate_limits."))}
    assert {"rate_limits.RateBook.refusal", "rate_limits.RateBook.start",
            "rate_limits.budget", "rate_limits.reopens_at"} <= deciding
    assert deciding - NOT_DECIDING <= sim_calls, deciding - sim_calls


GRAPH = {"tasks": {
    "build": {"type": "ok"},
    "test": {"type": "broken", "requires": ["build"]},
    "deploy": {"type": "ok", "requires": ["test"]},
    "notify": {"type": "ok", "requires": [{"label": "test", "on": "failure"}]},
    "cleanup": {"type": "ok", "requires": [{"label": "deploy", "on": "always"}]},
    "either": {"type": "ok", "convergence": "any",
               "requires": [{"label": "deploy", "on": "success"}, "notify"]},
}}


def _fail_broken(job: ClaimedJob) -> tuple[str, Any]:
    return ("failed", None) if job.type == "broken" else ("succeeded", None)


def test_ends_retries_and_dependents_are_decided_by_the_same_functions(
        store: Store, tmp_path: Path) -> None:
    types: dict[str, dict[str, Any]] = {"ok": {}, "broken": {"retries": 1}}
    _types(store, types)
    with core_calls() as real_calls:
        graph_id = store.graphs.submit(GRAPH)
        drive(store, _fail_broken)
    graph = store.graphs.get(graph_id)
    real = {j.label: (j.state, j.attempt) for j in graph.jobs}

    (tmp_path / "g.yaml").write_text(yaml.safe_dump(GRAPH))
    doc = {"workers": {"driver": {"capacity": 4}},
           "task_types": {"ok": {"duration": "1s"},
                          "broken": {"duration": "1s", "fail": 1.0, "retries": 1}},
           "arrivals": [{"graph": "g.yaml", "at": 0}]}
    with core_calls() as sim_calls:
        result = simulate(parse_scenario(doc, base=tmp_path), keep_jobs=True)
    assert result.simulation.jobs is not None
    sim = {j.label: (j.state.value, j.attempt) for j in result.simulation.jobs.values()}
    assert sim == real
    assert real["test"] == ("failed", 2) and real["either"][0] == "succeeded"
    assert graph.state == "finished"
    assert result.report["graphs"]["states"] == {"finished": 1}
    deciding = {f for f in real_calls if f.startswith(("edges.", "retry."))}
    assert {"edges.edge_outcome", "edges.dependent_state", "edges.failure_is_handled",
            "retry.decide_retry"} <= deciding
    assert deciding <= sim_calls, deciding - sim_calls


@pytest.mark.parametrize("hook", [core_calls])
def test_the_profiler_hook_sees_core_calls(hook: Callable[[], Any]) -> None:
    from taskyard.core.edges import edge_outcome
    from taskyard.core.states import JobState

    with hook() as seen:
        edge_outcome(JobState.SUCCEEDED, "success")
    assert seen == {"edges.edge_outcome"}
