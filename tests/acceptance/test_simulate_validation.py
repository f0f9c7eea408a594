"""The simulator against the real thing: a dozen sleeping jobs run by ``taskyard up``
(one worker, 2 slots) and simulated from the same description.

Tolerance, stated: a job's wait (from the first start of the run to its own start)
agrees within ``TOLERANCE`` seconds plus ``SLACK`` of the simulated wait, and two jobs
whose simulated starts are more than ``TOLERANCE`` apart start in the same order. Real
hand-offs (a worker reports an end, its cycle places the next job, a shell starts)
take milliseconds when the machine is idle; the tolerance leaves room for a loaded one.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from taskyard.api.yard import Yard

TOLERANCE = 1.0
SLACK = 0.20
# (type, seconds, priority), submitted in this order before the worker starts.
JOBS = [("nap", 0.6, 0), ("solo", 1.2, 0), ("nap", 1.0, 0), ("solo", 1.2, 2),
        ("nap", 1.5, 1), ("nap", 1.2, 0), ("solo", 0.8, 0), ("nap", 1.5, 3),
        ("nap", 1.0, 0), ("nap", 0.9, 1), ("solo", 1.5, 1), ("nap", 1.5, 0)]
TYPES = {"nap": {"handler": "shell:sleep {seconds}"},
         "solo": {"handler": "shell:sleep {seconds}", "locks": ["solo"]}}


def test_simulated_and_real_runs_agree(db_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TASKYARD_DB"}
    taskyard = [sys.executable, "-m", "taskyard", "--db", db_url]
    (tmp_path / "types.yaml").write_text(yaml.safe_dump({"task_types": TYPES}))
    scenario = {
        "name": "validation",
        "workers": {"w": {"count": 1, "capacity": 2, "prefetch": 0}},
        "task_types": {name: {**body, "duration": {"arg": "seconds"}}
                       for name, body in TYPES.items()},
        "arrivals": [{"type": t, "at": 0, "priority": p, "args": {"seconds": s}}
                     for t, s, p in JOBS],
    }
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))

    simulated = subprocess.run([*taskyard, "simulate", "scenario.yaml", "--json"],
                               cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=120, check=True)
    assert json.loads(simulated.stdout)["jobs"]["ended"] == {"succeeded": len(JOBS)}
    sim_starts = _simulated_starts(tmp_path / "scenario.yaml")

    subprocess.run([*taskyard, "apply", "types.yaml"], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=120)
    yard = Yard(db_url, inline_cycle=False)
    try:
        ids = [yard.submit(t, {"seconds": s}, priority=p) for t, s, p in JOBS]
        up = subprocess.run([*taskyard, "up", "--workers", "1", "--capacity", "2",
                             "--until-idle"], cwd=tmp_path, env=env, check=False,
                            capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr
        records = [yard.get_job(job_id) for job_id in ids]
    finally:
        yard.close()
    assert [r.state for r in records] == ["succeeded"] * len(JOBS)
    first = min(r.started_at for r in records if r.started_at is not None)
    real = {n: r.started_at - first for n, r in enumerate(records, 1)
            if r.started_at is not None}

    report = textwrap.indent("\n".join(
        f"job {n:2}: simulated {sim_starts[n]:5.2f}s  real {real[n]:5.2f}s"
        for n in sorted(real)), "  ")
    for n, started in real.items():
        assert abs(started - sim_starts[n]) <= TOLERANCE + SLACK * sim_starts[n], report
    for a, started_a in real.items():
        for b, started_b in real.items():
            if sim_starts[a] + TOLERANCE < sim_starts[b]:
                assert started_a < started_b, f"job {a} before job {b}:\n{report}"
    # The rules shaped this run: the solo jobs (one lock) never overlapped, and the
    # highest priorities went first.
    solo = sorted((r.started_at, r.finished_at) for r, (t, _, _) in zip(records, JOBS,
                                                                        strict=True)
                  if t == "solo")
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(solo)), report
    assert set(sorted(real, key=real.__getitem__)[:2]) == {8, 4}


def _simulated_starts(path: Path) -> dict[int, float]:
    from taskyard.sim import load_scenario, simulate

    result = simulate(load_scenario(path), trace=True)
    assert result.trace is not None
    return {job: t for t, what, job, _, _ in result.trace if what == "start"}
