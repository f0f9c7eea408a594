"""bench/history.py at a tiny size on both stores: the jobs run, every event of theirs is
rolled up in each round, and the rollups then count each job once."""

from __future__ import annotations

import json

import pytest

from bench import history
from taskyard.store import Store


def test_the_history_bench_rolls_up_every_event(db_url: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert history.main(["--db", db_url, "--jobs", "60", "--rounds", "2"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["jobs"] == 60 and row["events"] == 180  # pending, running, succeeded
    assert len(row["cpu_s"]) == len(row["wall_s"]) == 2 and row["cpu_us_per_job"] > 0
    store = Store(db_url)
    try:
        with store.read() as tx:
            counted = tx.raw.all("SELECT arrived, started, succeeded, finished FROM history "
                                 "WHERE granularity = 0")
    finally:
        store.close()
    assert counted == [(60, 60, 60, 60)]


def test_the_cycles_beside_a_round_are_timed_for_both_ways_of_rolling_up(
        db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert history.main(["--db", db_url, "--jobs", "30", "--rounds", "1",
                         "--beside-cycles"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [r["round"] for r in rows] == ["keeper", "at_once"]
    for r in rows:
        assert r["cycles"] >= 1 and 0 < r["p50_ms"] <= r["max_ms"]
        assert 0 < r["before_p50_ms"] <= r["before_max_ms"]
