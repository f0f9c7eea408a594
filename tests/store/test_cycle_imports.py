"""A process's first placing submit imports the cycle's modules before it can hold the
cycle's lock: on PostgreSQL the insert itself may take the lock, and a first import
(~20 ms) under it held every other placer back. A fresh interpreter per case (this
one has imported everything already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from taskyard.api.yard import Yard

PROBE = r"""
import json, sys
from taskyard.api.yard import Yard

CYCLE = ("taskyard.store.transitions.cycle", "taskyard.scheduler.cycle")
yard = Yard(sys.argv[1])
store = yard.store
before = [m for m in CYCLE if m in sys.modules]
seen = []
driver = store.driver
insert, lock = driver.insert_jobs, driver.cycle_lock

def inserting(*args, **kwargs):
    seen.append(("insert", [m for m in CYCLE if m in sys.modules]))
    return insert(*args, **kwargs)

def locking(*args, **kwargs):
    seen.append(("lock", [m for m in CYCLE if m in sys.modules]))
    return lock(*args, **kwargs)

driver.insert_jobs, driver.cycle_lock = inserting, locking
job = yard.submit("t")
print(json.dumps({"before": before, "seen": seen,
                  "state": store.jobs.get(job).state}))
yard.close()
"""


def test_the_first_placing_submit_imports_the_cycle_before_its_insert(db_url: str) -> None:
    yard = Yard(db_url)
    try:
        yard.add_task_type("t", "python:json:dumps")
        yard.store.workers.register("w", ["default"], 1, lease_seconds=600)
    finally:
        yard.close()
    done = subprocess.run([sys.executable, "-c", PROBE, db_url], capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] == []  # opening a Yard does not load the cycle (start-up time)
    assert found["seen"] and found["seen"][0][0] == "insert"
    assert all(modules == ["taskyard.store.transitions.cycle", "taskyard.scheduler.cycle"]
               for _, modules in found["seen"]), found["seen"]
    assert found["state"] == "dispatched"  # the submit's own cycle placed it
