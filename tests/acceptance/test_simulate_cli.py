"""``taskyard simulate`` as users run it: the examples, the table, ``--json``,
``--plots``, ``--workers``, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples" / "simulate"
QUICK = ["approvals.yaml", "farm.yaml", "locks.yaml", "pipeline.yaml", "rate_limits.yaml"]
"""Every example but the benchmark's million jobs (bench/simulate.py runs that one)."""


def taskyard(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TASKYARD_DB"}
    return subprocess.run([sys.executable, "-m", "taskyard", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300, check=False)


def test_every_example_is_listed_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.yaml")) == sorted([*QUICK, "million.yaml"])


@pytest.mark.parametrize("name", QUICK)
def test_the_examples_run_and_report(name: str, tmp_path: Path):
    done = taskyard("simulate", str(EXAMPLES / name), "--json", "--plots", str(tmp_path))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["jobs"]["created"] > 100
    assert not report["jobs"]["unfinished"]
    assert set(report) >= {"pools", "waits", "starvation", "locks", "graphs", "queue",
                           "throughput", "simulated_seconds"}
    for png in ("queue.png", "waits.png", "utilization.png"):
        data = (tmp_path / png).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_the_table_and_a_capacity_question():
    sixty = taskyard("simulate", str(EXAMPLES / "farm.yaml"))
    forty = taskyard("simulate", str(EXAMPLES / "farm.yaml"), "--workers", "builders=40")
    assert sixty.returncode == 0 and forty.returncode == 0, (sixty.stderr, forty.stderr)
    for section in ("SUMMARY", "POOLS", "WAITS", "LOCK CONTENTION"):
        assert section in sixty.stdout
    assert "build  60       120" in sixty.stdout and "build  40       80" in forty.stdout
    as_json = [json.loads(taskyard("simulate", str(EXAMPLES / "farm.yaml"), "--json",
                                   "--workers", f"builders={n}").stdout) for n in (60, 40)]
    # The same jobs arrive whatever the capacity (one random stream per purpose)...
    assert as_json[0]["jobs"]["created"] == as_json[1]["jobs"]["created"]
    # ...and fewer machines make the low priorities wait longer.
    assert as_json[1]["starvation"]["longest_wait"] > as_json[0]["starvation"]["longest_wait"]


def test_the_docs_worked_question_is_what_the_example_says():
    """docs/simulator.md quotes these runs: the page must follow the code."""
    page = (Path(__file__).parents[2] / "docs" / "simulator.md").read_text()
    for workers in (60, 40):
        report = json.loads(taskyard("simulate", str(EXAMPLES / "farm.yaml"), "--json",
                                     "--workers", f"builders={workers}").stdout)
        assert f"{report['pools'][0]['utilization']:.1%}".replace("%", " %") in page
        longest = round(report["starvation"]["longest_wait"])
        assert f"{longest // 60} min {longest % 60:02d} s" in page
        assert f"The same {report['jobs']['created']:,} jobs arrive" in page


def test_a_seed_gives_one_report():
    runs = [json.loads(taskyard("simulate", str(EXAMPLES / "locks.yaml"), "--json",
                                *seed).stdout) for seed in ([], [], ["--seed", "9"])]
    for report in runs:
        del report["wall_seconds"]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2] and runs[2]["seed"] == 9


@pytest.mark.parametrize(("args", "code", "message"), [
    (["simulate"], 2, "give a SCENARIO file or --from-db URL (one of them)"),
    (["simulate", "missing.yaml"], 2, "does not exist"),
    (["simulate", "bad.yaml"], 1, "workers.east.capacity: must be an integer >= 0"),
    (["simulate", "good.yaml", "--workers", "east"], 2, "is not NAME=N or NAME=NxC"),
    (["simulate", "good.yaml", "--workers", "west=2"], 1, "no worker group 'west'"),
    (["simulate", "good.yaml", "--from-db", "sqlite:///x.db"], 2, "one of them"),
])
def test_errors_are_one_line(tmp_path: Path, args: list[str], code: int, message: str):
    (tmp_path / "bad.yaml").write_text("workers: {east: {capacity: -2}}\n")
    (tmp_path / "good.yaml").write_text(
        "workers: {east: {capacity: 1}}\ntask_types: {t: {duration: 1s}}\n"
        "arrivals: [{type: t, at: 0}]\n")
    done = taskyard(*args, cwd=tmp_path)
    assert done.returncode == code, done
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr
    assert done.stderr.startswith("taskyard: error: ")


def test_a_replay_of_nothing_says_so(tmp_path: Path):
    assert taskyard("--db", f"sqlite:///{tmp_path}/t.db", "init").returncode == 0
    done = taskyard("simulate", "--from-db", f"sqlite:///{tmp_path}/t.db", "--since", "1h")
    assert done.returncode == 0, done.stderr
    assert "None" not in done.stdout
    assert "no job waited" in done.stdout and "replayed 0 job(s)" in done.stdout
