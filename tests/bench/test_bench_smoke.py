"""The benchmark harness at tiny sizes, on taskyard only: ``make bench`` cannot rot.

Runs ``python -m bench.suite --profile smoke`` (no peers, plots only if matplotlib is
installed) on SQLite and on a fresh PostgreSQL database of the ``make test`` cluster,
then checks that the tables and the JSON were written with positive figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN = os.environ.get("TASKYARD_TEST_PG")
REQUIRE_PG = os.environ.get("TASKYARD_REQUIRE_PG") == "1"

# Figures every smoke run must produce for its system, all positive.
EXPECTED = ["w1_enqueue_call", "w1_complete_1", "w2_p50", "w2_p99", "http_submit", "http_p50",
            "http_p99", "http_batch", "http_submit_p50", "w3_200", "w3_2000",
            "w4_submit_fanout_20", "w4_e2e_fanout_20", "w4_p50_fanout_20",
            "w5_w3_2000", "w5_w4s_fanout_20", "w5_w4w_fanout_20",
            "w1_complete_2_lean", "w5_w1_lean"]
# PostgreSQL only: the database work per job (bench.dbwork), counted on the wire.
EXPECTED_PG = ["db_w1_enqueue_call_round_trips", "db_w1_enqueue_call_statements",
               "db_w1_enqueue_call_transactions", "db_w1_enqueue_batch_round_trips",
               "db_w1_complete_round_trips", "db_w1_complete_statements",
               "db_w1_complete_transactions", "db_w2_round_trips", "db_w2_statements",
               "db_w2_transactions", "db_w2_path"]


def _drop(admin: str, database: str) -> bool:
    """Drop ``database`` if it exists; whether it did."""
    engine = create_engine(make_url(admin).set(drivername="postgresql+psycopg",
                                               database="postgres"),
                           isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        existed = conn.execute(text("SELECT count(*) FROM pg_database WHERE datname = :d"),
                               {"d": database}).scalar() == 1
        conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    engine.dispose()
    return existed


def _setting(admin: str, name: str) -> str:
    engine = create_engine(make_url(admin).set(drivername="postgresql+psycopg"))
    with engine.connect() as conn:
        value = str(conn.execute(text(f"SHOW {name}")).scalar())
    engine.dispose()
    return value


def _preloaded(admin: str) -> bool:
    return "pg_stat_statements" in _setting(admin, "shared_preload_libraries")


@pytest.mark.parametrize("backend", ["sqlite", "pg"])
def test_bench_smoke(backend: str, tmp_path: Path) -> None:
    system = f"taskyard-{backend}"
    out = tmp_path / "results"
    args = [sys.executable, "-m", "bench.suite", "--profile", "smoke", "--systems", system,
            "--out", str(out)]
    run_db = None
    left_behind = False
    if backend == "pg":
        if PG_ADMIN is None:
            if REQUIRE_PG:
                pytest.fail("TASKYARD_REQUIRE_PG=1 but TASKYARD_TEST_PG is not set")
            pytest.skip("PostgreSQL not configured (set TASKYARD_TEST_PG or run `make test`)")
        # The suite names its databases after this one: <name>_taskyard, fresh.
        name = f"bench_smoke_{uuid.uuid4().hex[:10]}"
        args += ["--pg", make_url(PG_ADMIN).set(database=name).render_as_string(
            hide_password=False)]
        run_db = f"{name}_taskyard"
    try:
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=240,
                              check=False)
    finally:
        if run_db and PG_ADMIN:
            left_behind = _drop(PG_ADMIN, run_db)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert not left_behind, "each run drops its database (no autovacuum work for the next)"

    raw = list((out / "raw").glob("*.json"))
    assert len(raw) == 1
    runs = json.loads(raw[0].read_text())["runs"]
    assert runs and all(r["result"]["status"] == "ok" for r in runs), [
        (r["workload"], r["cell"], r["result"]) for r in runs if r["result"]["status"] != "ok"]
    # W1's memory comes with its parts (each process and what it runs); W2's latency
    # with the submit's own time and the store's bare round trip.
    for run in (r for r in runs if r["workload"] == "W1"):
        parts = run["result"]["processes"]
        assert {"taskyard scheduler", "taskyard worker"} & {p["runs"] for p in parts}, parts
        assert all(p["peak_mb"] > 0 for p in parts), parts
    w2 = [r["result"] for r in runs if r["workload"] == "W2"]
    assert w2 and all(r["submit_p50_ms"] > 0 and r["round_trip_p50_ms"] > 0 for r in w2)

    # The counted runs: their windows' pg_stat_statements profiles when the cluster
    # loads it (scripts/pg-cluster does), and its tracking off again afterwards.
    counted = [r["result"] for r in runs if r["workload"] == "DB"]
    assert len(counted) == (2 if backend == "pg" else 0)
    if counted and PG_ADMIN and _preloaded(PG_ADMIN):
        w1 = next(r for r in counted if r["part"] == "W1")
        assert w1["complete"]["pg_stat_statements"]["statements"] > 0
        assert _setting(PG_ADMIN, "pg_stat_statements.track") == "none"

    summary = json.loads((out / "latest.json").read_text())
    by_id = {m["id"]: m["values"][system] for m in summary["metrics"]}
    for mid in EXPECTED + (EXPECTED_PG if backend == "pg" else []):
        cell = by_id[mid]
        assert cell["status"] == "ok", (mid, cell)
        assert cell["median"] > 0, (mid, cell)
    assert summary["latency_samples_ms"][system]

    table = (out / "latest.md").read_text()
    for title in ("W1 throughput", "W2 latency", "W3 backlog", "W4 graphs", "W5 memory",
                  "Configurations"):
        assert f"## {title}" in table
    assert ("## Database work per job (machine-independent): W1" in table) == (
        backend == "pg")
    assert system in table
    pngs = {p.name for p in out.glob("*.png")}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not pngs
    else:
        assert pngs == {"throughput.png", "latency_cdf.png", "backlog.png"}
