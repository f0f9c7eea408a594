"""A process's first placing submit has the cycle's modules loaded before it can hold the
cycle's lock: a first import (~20 ms) under the lock held every other placer back. On
PostgreSQL the insert itself may take the lock, so they load before the insert; on
SQLite the lock is taken after the insert, only with a live worker, and a submit with
none loads no cycle code (CLI start-up, tests/acceptance/test_cli_startup.py). A fresh
interpreter per case (this one has imported everything already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from taskyard.api.yard import Yard

PROBE = r"""
import contextlib, json, sys
from taskyard.api.yard import Yard

CYCLE = ("taskyard.store.transitions.cycle", "taskyard.scheduler.cycle")
yard = Yard(sys.argv[1])
store = yard.store
seen = []
driver = store.driver
insert, lock = driver.insert_jobs, driver.cycle_lock

def loaded():
    return [m for m in CYCLE if m in sys.modules]

def inserting(*args, **kwargs):
    seen.append(("insert", loaded()))
    return insert(*args, **kwargs)

@contextlib.contextmanager
def locking(*args, **kwargs):
    with lock(*args, **kwargs) as held:  # what is loaded once the lock is ours
        seen.append(("lock", loaded()))
        yield held

driver.insert_jobs, driver.cycle_lock = inserting, locking
before = loaded()
job = yard.submit("t")
print(json.dumps({"before": before, "seen": seen, "state": store.jobs.get(job).state}))
yard.close()
"""


def test_the_first_placing_submit_loads_the_cycle_before_it_can_hold_the_lock(
        db_url: str) -> None:
    yard = Yard(db_url)
    try:
        yard.add_task_type("t", "python:json:dumps")
        yard.store.workers.register("w", ["default"], 1, lease_seconds=600)
        backend = yard.store.backend
    finally:
        yard.close()
    done = subprocess.run([sys.executable, "-c", PROBE, db_url], capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] == []  # opening a Yard does not load the cycle (start-up time)
    assert found["state"] == "dispatched"  # the submit's own cycle placed it
    cycle = "taskyard.store.transitions.cycle"
    if backend == "postgresql":  # the insert may take the lock: loaded before it
        assert found["seen"][0] == ["insert", [cycle, "taskyard.scheduler.cycle"]]
    else:  # the insert takes no lock (and with no live worker nothing is loaded)
        assert found["seen"][0] == ["insert", []]
    locks = [modules for step, modules in found["seen"] if step == "lock"]
    assert all(cycle in modules for modules in locks), found["seen"]
    assert backend == "postgresql" or locks  # SQLite: Tx.cycle took the lock
