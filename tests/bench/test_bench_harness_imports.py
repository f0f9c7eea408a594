"""What the harness loads into the peers' processes. A peer's W3 run happens in a
``bench.run_one`` process whose own memory is the W3 dequeuer's figure: the harness
must not load SQLAlchemy or taskyard there (until run 43 it did, ~12 MiB more in every
peer's W3 row, and 0.3 s more per run). A peer's daemons load none of the harness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.peers.common import database_of, libpq_dsn, pg_url, run_db

HERE = Path(__file__).resolve().parents[2]

_PROBE = """
import json, sys
import bench.run_one, bench.peers.common, bench.graphs, bench.throughput
from bench.peers.common import run_db, libpq_dsn, recreate_pg
run_db("postgresql://u@127.0.0.1:5/bench", "huey-pg")
libpq_dsn("postgresql+psycopg://u@127.0.0.1:5/bench")
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"sqlalchemy", "taskyard"})))
"""


def test_the_harness_of_a_peers_run_imports_neither_sqlalchemy_nor_taskyard() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=HERE, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert json.loads(out) == []


_APP_PROBE = """
import json, sys
import bench.peers, bench.handlers  # what a peer's app module (bench.peers.huey_app) runs
print(json.dumps(sorted(m for m in sys.modules if m.startswith("bench"))))
"""


def test_a_peers_daemon_loads_no_harness_module() -> None:
    # A huey consumer or Celery worker imports bench.peers.<peer>_app, which runs
    # bench/peers/__init__.py first: until run 44 that imported the harness (and, until
    # run 43, SQLAlchemy and taskyard with it: 11-14 MiB in each of the peer's
    # processes, in its W1 and W4 memory figures).
    out = subprocess.run([sys.executable, "-c", _APP_PROBE], cwd=HERE, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert json.loads(out) == ["bench", "bench.handlers", "bench.peers"]


def test_the_urls_a_peer_gets_name_its_own_database() -> None:
    admin = "postgresql://taskyard@127.0.0.1:5432/bench_20261128"
    assert run_db(admin, "huey-pg") == "postgresql://taskyard@127.0.0.1:5432/bench_20261128_huey-pg"
    assert database_of(run_db(admin, "pgqueuer-pg")) == "bench_20261128_pgqueuer-pg"
    assert pg_url(admin, "postgres") == "postgresql://taskyard@127.0.0.1:5432/postgres"
    assert libpq_dsn("postgresql+psycopg://u:p%40ss@h:1/d") == "postgresql://u:p%40ss@h:1/d"
    assert database_of("postgresql://h:1") is None
    assert run_db("postgresql://h:1", "x") == "postgresql://h:1/bench_x"
