"""Seed 000 live: either trigger alone completes all work, and the AWX rules hold under a
burst of mixed jobs on real workers (checked from the recorded attempt times)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import yaml

from conftest import Cluster
from taskyard.api.yard import Yard
from taskyard.core.locks import decode_claim

AWX = Path(__file__).parents[2] / "examples" / "awx" / "taskyard.yaml"


def _workload(yard: Yard) -> list[int]:
    yard.add_task_type("quick", "shell:true")
    ids = [yard.submit("quick") for _ in range(10)]
    graph = yard.submit_graph({"tasks": {
        "a": {"type": "quick"}, "b": {"type": "quick", "requires": ["a"]},
        "c": {"type": "quick", "requires": ["b"]},
    }})
    return [*ids, *(j.id for j in yard.graph(graph).jobs)]


@pytest.mark.parametrize("trigger", ["periodic-only", "events-only"])
def test_either_trigger_alone_completes_all_work(db_url: str, trigger: str) -> None:
    yard = Yard(db_url, inline_cycle=False)  # no cycle on submit: only the daemon schedules
    cluster = Cluster(db_url, yard)
    try:
        if trigger == "periodic-only":
            cluster.add_scheduler(interval=0.2, wakeups=False)
        else:
            cluster.add_scheduler(interval=1e6, wakeups=True)  # never periodic after start
        cluster.add_worker("w1", capacity=2)
        for job_id in _workload(yard):
            assert yard.wait(job_id, 60).state == "succeeded"
    finally:
        cluster.stop()
        yard.close()


def test_awx_rules_hold_under_a_burst(cluster: Cluster) -> None:
    yard = cluster.yard
    yard.apply(yaml.safe_load(AWX.read_text()), verify=False)
    cluster.add_scheduler()
    cluster.add_worker("east-1", capacity=3, pools=("east", "default"))
    cluster.add_worker("w2", capacity=2)
    rng = random.Random(7)
    ids = []
    for _ in range(36):
        kind = rng.choice(["project-update", "inventory-update", "job", "job", "system-job"])
        args = {"project-update": {"project_id": rng.randint(1, 2)},
                "inventory-update": {"source_id": rng.randint(1, 3),
                                     "inventory_id": rng.randint(1, 2)},
                "job": {"template_id": rng.randint(1, 3), "project_id": rng.randint(1, 2),
                        "inventory_id": rng.randint(1, 2)},
                "system-job": {}}[kind]
        ids.append(yard.submit(kind, args))
    jobs = [yard.wait(job_id, 120) for job_id in ids]
    everything = {j.id: j for j in yard.jobs(limit=1000)}  # includes spawned project updates
    assert all(j.state == "succeeded" for j in everything.values())
    runs = [(a.started_at, a.finished_at, a.worker, job) for job in everything.values()
            for a in job.attempts if a.state == "succeeded"]
    capacity = {"east-1": 3, "w2": 2}
    for (s1, e1, _w1, j1), (s2, e2, _w2, j2) in itertools.combinations(runs, 2):
        assert s1 and e1 and s2 and e2
        if s1 < e2 and s2 < e1:  # the two ran at the same time
            for c1 in map(decode_claim, j1.locks):
                for c2 in map(decode_claim, j2.locks):
                    assert not c1.conflicts(c2), (j1.id, j2.id, c1, c2)
    for worker, cap in capacity.items():
        mine = [(s, e) for s, e, w, _ in runs if w == worker]
        points = sorted([(s, 1) for s, _ in mine] + [(e, -1) for _, e in mine])
        level = peak = 0
        for _, step in points:
            level += step
            peak = max(peak, level)
        assert peak <= cap, (worker, peak)
    assert len(jobs) == 36
