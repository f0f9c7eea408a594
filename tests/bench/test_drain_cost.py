"""``python -m bench.drain_cost`` at a tiny size, on a database of its own in the
``make test`` cluster: it drains, reads each process's CPU, and counts the database's
statements (nested ones too) without touching the cluster's other databases."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from bench.drain_cost import drain
from bench.peers.common import pg_url

PG_ADMIN = os.environ.get("TASKYARD_TEST_PG")


@pytest.fixture
def url() -> Iterator[str]:
    if PG_ADMIN is None:
        if os.environ.get("TASKYARD_REQUIRE_PG") == "1":
            pytest.fail("TASKYARD_REQUIRE_PG=1 but TASKYARD_TEST_PG is not set")
        pytest.skip("PostgreSQL not configured (set TASKYARD_TEST_PG or run `make test`)")
    name = f"drain_cost_{uuid.uuid4().hex[:10]}"
    yield pg_url(PG_ADMIN, name)
    with psycopg.connect(pg_url(PG_ADMIN, "postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_drain_is_costed_per_process_and_statement(url: str) -> None:
    # Enough jobs for each process to spend many clock ticks (10 ms, /proc's unit): a
    # drain of 300 takes 45-50 ms here, the worker charged 1-3 ticks for it, and once in
    # make test none at all; a drain of 3,000, 0.4 s and some 25 ticks.
    row = drain(url, 3000, statements=True)
    assert row["complete_per_s"] > 0
    assert row["cpu_us_per_job"]["worker"] > 0 and row["cpu_us_per_job"]["postgresql"] > 0
    queries = {s["query"]: s for s in row["statements"]}
    dispatch = [s for q, s in queries.items() if q.startswith("WITH v(job, w, name, chan, carry)")]
    assert dispatch and dispatch[0]["calls"] >= 1, queries
    with psycopg.connect(pg_url(url, "postgres"), autocommit=True) as admin:
        left = admin.execute(
            "SELECT count(*) FROM pg_db_role_setting s JOIN pg_database d ON d.oid = "
            "s.setdatabase WHERE d.datname = %s", (url.rsplit("/", 1)[1],)).fetchone()
    assert left == (0,)  # its counting settings are gone with the run
