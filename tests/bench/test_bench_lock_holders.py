"""bench.lock_holders: the cycle's lock holder sampled and classed by what its session
does — waiting between round trips, mid-pipeline, or running a statement."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest
from tests.cycle_lock import frozen_mid_pipeline, lock_holder

from bench import lock_holders
from taskyard.store.postgresql.cycle import ADVISORY_KEY
from taskyard.store.postgresql.urls import pg_target


def _libpq(pg_url: str) -> str:
    return pg_target(pg_url).libpq()


def _until_held_by(url: str, pid: int) -> None:
    deadline = time.monotonic() + 60
    while lock_holder(url, ADVISORY_KEY) != pid:
        assert time.monotonic() < deadline, "the lock was never held"
        time.sleep(0.01)


def test_a_holder_idle_in_its_transaction_is_between_round_trips(pg_url: str) -> None:
    url = _libpq(pg_url)
    with psycopg.connect(url, application_name="worker-7") as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_KEY,))
        found = lock_holders.sample(url, 0.2, 0.01)
    assert found["held"] == found["samples"] > 0 and found["held_share"] == 1.0
    assert found["of_held"] == {"between_round_trips": 1.0}
    assert found["by_process"] == {"worker/between_round_trips": found["held"]}


def test_a_holder_frozen_mid_pipeline_is_told_apart(pg_url: str) -> None:
    url = _libpq(pg_url)
    with frozen_mid_pipeline(url):
        found = lock_holders.sample(url, 0.2, 0.01)
    assert found["of_held"] == {"mid_pipeline": 1.0}


def test_a_holder_running_a_statement_is_the_servers_work(pg_url: str) -> None:
    url = _libpq(pg_url)
    with psycopg.connect(url, application_name="scheduler") as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_KEY,))
        pid = holder.info.backend_pid
        sleeper = threading.Thread(target=holder.execute, args=("SELECT pg_sleep(3)",))
        sleeper.start()
        try:
            _until_held_by(url, pid)
            with psycopg.connect(url, autocommit=True) as look:
                deadline = time.monotonic() + 60
                while look.execute("SELECT state FROM pg_stat_activity WHERE pid = %s",
                                   (pid,)).fetchone() != ("active",):
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
            found = lock_holders.sample(url, 0.2, 0.01)
        finally:
            sleeper.join(60)
    assert found["of_held"] == {"server": 1.0}
    assert found["by_process"] == {"scheduler/server": found["held"]}


def test_no_holder_no_share(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert lock_holders.main(["--db", _libpq(pg_url), "--seconds", "0.1",
                              "--interval-ms", "10"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["samples"] > 0 and row["held"] == 0 and row["of_held"] == {}


def test_a_non_positive_window_is_refused(pg_url: str) -> None:
    with pytest.raises(SystemExit) as refused:
        lock_holders.main(["--db", _libpq(pg_url), "--seconds", "0"])
    assert refused.value.code == 2
