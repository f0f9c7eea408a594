"""The suite's plan: which W4 graphs each system cannot express is known before any run
starts (no process, no wall time), and every other run is planned."""

from __future__ import annotations

from bench import suite

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
        ("celery-redis", "fanout 10000"), ("celery-redis", "fanout 100000")}
    row = suite.cannot(next(r for r in runs if r.system == "procrastinate-pg"
                            and r.workload == "W4"), found["procrastinate-pg"])
    assert row is not None and row["status"] == "cannot" and "no dependencies" in row["reason"]
    # Other workloads are never settled this way.
    assert all(suite.cannot(r, found[r.system]) is None for r in runs if r.workload != "W4")
