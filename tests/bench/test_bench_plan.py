"""The suite's plan: which W4 graphs each system cannot express is known before any run
starts (no process, no wall time), and every other run is planned."""

from __future__ import annotations

from bench import budget, suite

SYSTEMS = suite.SYSTEMS


def test_graphs_a_system_cannot_express_are_settled_without_a_run() -> None:
    runs = suite.plan(suite.PROFILES["full"], list(SYSTEMS), reps=1)
    found = suite.adapters(list(SYSTEMS), {"pg": "postgresql://u@127.0.0.1:1/x",
                                           "redis": "redis://127.0.0.1:1"})
    expressible = {(r.system, r.cell) for r in runs
                   if r.workload == "W4" and suite.cannot(r, found[r.system]) is None}
    assert expressible == {
        *((f"taskyard-{b}", f"{shape} {n}") for b in ("sqlite", "pg")
          for shape in ("chain", "fanout", "random") for n in (10_000, 100_000)),
        *((f"huey-{s}", f"fanout {n}") for s in ("sqlite", "pg", "redis")
          for n in (10_000, 100_000)),
        ("celery-redis", "fanout 10000"), ("celery-redis", "fanout 100000"),
        # The graphs small enough for Airflow: run by every system that can express them.
        *((s, cell) for s in ("taskyard-sqlite", "taskyard-pg", "airflow-pg")
          for cell in ("chain 100", "fanout 1000", "random 1000")),
        *((f"huey-{s}", "fanout 1000") for s in ("sqlite", "pg", "redis")),
        ("celery-redis", "chain 100"), ("celery-redis", "fanout 1000")}
    row = suite.cannot(next(r for r in runs if r.system == "procrastinate-pg"
                            and r.workload == "W4"), found["procrastinate-pg"])
    assert row is not None and row["status"] == "cannot" and "no dependencies" in row["reason"]
    # Airflow runs those small graphs only, once; the HTTP API is taskyard's alone.
    assert {(r.workload, r.cell, r.rep) for r in runs if r.system == "airflow-pg"} == {
        ("W4", "chain 100", 1), ("W4", "fanout 1000", 1), ("W4", "random 1000", 1)}
    assert {r.system for r in runs if r.workload == "HTTP"} == {"taskyard-sqlite",
                                                                "taskyard-pg"}
    # So is taskyard deployed as huey's `-w 2`: its W1 cell runs on taskyard only, once
    # per repetition, 2 workers of 1 slot each, the scheduler in the first.
    lean = [r for r in runs if r.cell == suite.LEAN]
    assert sorted(r.system for r in lean) == ["taskyard-pg", "taskyard-sqlite"]
    assert all(r.params["capacity"] == 1 and r.params["workers"] == 2
               and r.params["inproc"] is True for r in lean)
    # Other workloads are never settled this way.
    assert all(suite.cannot(r, found[r.system]) is None for r in runs if r.workload != "W4")


def test_the_budget_expects_a_run_to_last_as_long_as_its_cells_longest_earlier_run() -> None:
    """A 100,000-job graph's limit counts 20 s for its submit (and 3 s of running); once
    the cell has run, its measured wall time is the estimate, so the last cells of a
    suite near its budget still run when they fit, and are skipped when they would not."""
    runs = suite.plan(suite.PROFILES["full"], ["taskyard-sqlite", "huey-sqlite"], reps=3)
    cell = [r for r in runs if r.cell == "random 100000" and r.system == "taskyard-sqlite"]
    first, second, third = cell
    assert budget.expected_seconds(first, runs) == first.soft == 3 + 20.0  # nothing ran yet
    first.result = {"status": "timeout", "wall_s": 3.5}
    second.result = {"status": "ok", "wall_s": 4.0}
    other = next(r for r in runs if r.cell == "random 100000" and r.system == "huey-sqlite")
    other.result = {"status": "ok", "wall_s": 60.0}  # another system: not this cell's
    assert budget.expected_seconds(third, runs) == 4.0
    assert budget.fits(third, runs, elapsed=1_000.0, budget=1_004.0)
    assert not budget.fits(third, runs, elapsed=1_000.1, budget=1_004.0)
    assert budget.fits(third, runs, elapsed=1e9, budget=None)
    # A skipped run measured nothing: the limit stands until a run of the cell has.
    first.result, second.result = {"status": "skipped"}, {"status": "cannot"}
    assert budget.expected_seconds(third, runs) == third.soft


def test_the_database_work_is_counted_once_for_each_postgresql_system() -> None:
    """Counted runs (bench.dbwork): W1 and W2 of every PostgreSQL system with a W1 and a
    W2 (not Airflow's, not SQLite's or redis'), in the first repetition only, and before
    the second repetition starts (a budget that runs out cuts repetitions first)."""
    runs = suite.plan(suite.PROFILES["full"], list(SYSTEMS), reps=3)
    counted = [r for r in runs if r.workload == "DB"]
    assert sorted((r.system, r.cell) for r in counted) == sorted(
        (s, part) for s in ("taskyard-pg", "procrastinate-pg", "pgqueuer-pg", "huey-pg")
        for part in ("W1", "W2"))
    assert {r.rep for r in counted} == {1}
    second = next(i for i, r in enumerate(runs) if r.rep == 2)
    assert all(i < second for i, r in enumerate(runs) if r.workload == "DB")
    w1 = next(r for r in counted if r.cell == "W1")
    assert w1.params == {"part": "W1", "jobs": 10_000, "calls": 200, "workers": 2,
                         "timeout": 15}
    assert w1.hard > w1.soft > w1.params["timeout"]
    # A profile without them plans none.
    lean = suite.Profile(**{**suite.PROFILES["smoke"].__dict__, "db": None})
    assert not [r for r in suite.plan(lean, ["taskyard-pg"], reps=1) if r.workload == "DB"]
