"""A SQLite connection's memory stays bounded through a large write transaction: its
dirty pages spill to the WAL once its page cache (8 MiB) is full, and no page is read
through a memory map (which would keep every page touched in the process's resident set).

Measured in a fresh process, after the fill (done here): RssAnon grew by ~16 MiB over a
200,000-row UPDATE with the bounded cache, by ~54 MiB with the former 64 MiB one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from taskyard.model.records import TaskTypeSpec
from taskyard.store import open_store
from taskyard.store.sqlite.driver import MMAP_BYTES, PAGE_CACHE_KIB

ROWS = 200_000
BOUND_MIB = 30

_MEASURE = """
import sys
from sqlalchemy import text
from taskyard.store import open_store

def anon_mib():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no RssAnon")

store = open_store(sys.argv[1])
with store.engine.begin() as conn:
    sizes = conn.execute(text("PRAGMA cache_size")).scalar(), \\
        conn.execute(text("PRAGMA mmap_size")).scalar()
    before = anon_mib()
    conn.execute(text("UPDATE jobs SET priority = priority + 1, args = '{\\"a\\": 1}'"))
    grown = anon_mib() - before
print(sizes[0], sizes[1], grown)
store.close()
"""


def test_a_large_write_transaction_keeps_a_bounded_page_cache(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.db'}"
    store = open_store(url)
    store.init_schema()
    store.task_types.put(TaskTypeSpec("t", "python:bench.handlers:noop"))
    with store.engine.begin() as conn:  # ~40 MB of rows, written by the database itself
        conn.execute(text(
            "INSERT INTO jobs (type, args, state, priority, pools, cost, locks, created_at) "
            "WITH RECURSIVE x(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM x WHERE i < :n) "
            "SELECT 't', '{}', 'pending', 0, '[\"default\"]', 1, '[]', 0 FROM x"), {"n": ROWS})
    store.close()
    # A process of its own: a pytest process reuses memory freed by earlier tests.
    out = subprocess.run([sys.executable, "-c", _MEASURE, url], check=True,
                         capture_output=True, text=True, timeout=300).stdout.split()
    cache, mmap, grown = int(out[0]), int(out[1]), float(out[2])
    assert (cache, mmap) == (-PAGE_CACHE_KIB, MMAP_BYTES)
    assert grown < BOUND_MIB, f"RssAnon grew by {grown:.1f} MiB over {ROWS:,} rows updated"
