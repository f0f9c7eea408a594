"""bench.lone_submits: lone submits to a registered worker, its jobs ended between
submits, left running, or the last alone running; every job placed either way."""

from __future__ import annotations

import json

import pytest

from bench import lone_submits


def test_both_modes_place_every_job(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert lone_submits.main(["--db", pg_url, "--jobs", "20"]) == 0
    idle, busy, last = (json.loads(line)
                        for line in capsys.readouterr().out.strip().splitlines())
    total = 20 + lone_submits.WARMUP
    assert idle["states"] == {"succeeded": total}  # ended by the run, once placed
    assert busy["states"] == {"dispatched": total}
    assert last["states"] == {"succeeded": total - 1, "dispatched": 1}
    for row in (idle, busy, last):
        assert row["jobs"] == 20 and 0 < row["p50_ms"] <= row["p99_ms"]
        assert row["client_cpu_ms"] > 0 and "dispatch_calls" not in row


def test_a_pause_before_each_submit_is_reported_with_its_round_trip(
        pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert lone_submits.main(["--db", pg_url, "--jobs", "5", "--mode", "idle",
                              "--pause", "2"]) == 0
    (row,) = (json.loads(line) for line in capsys.readouterr().out.strip().splitlines())
    assert row["states"] == {"succeeded": 5 + lone_submits.WARMUP}
    assert row["pause_ms"] == 2.0 and row["round_trip_p50_ms"] > 0


def test_a_negative_pause_is_refused(pg_url: str) -> None:
    with pytest.raises(SystemExit) as refused:
        lone_submits.main(["--db", pg_url, "--pause", "-1"])
    assert refused.value.code == 2
