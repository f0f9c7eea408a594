"""taskyard behind PgBouncer in transaction mode (Debian's pgbouncer, which the Makefile
installs): the daemons and the submits go through the pooler, wake-ups are heard on the
server itself (``--listen-db``) or polled for, and nothing relies on a session — each
transaction may run on another server connection (advisory locks are transaction-scoped,
no prepared statement outlives its transaction, no setting is sent at connect).

A server with room for 20 connections serves a scheduler and eight workers through a
pooler of 6 server connections; on their own, at two connections each, they would not
fit. ``bench.fleet --pooler`` runs 200 workers the same way."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.fleet.daemons import Daemons
from tests.fleet.servers import PGBOUNCER, PgBouncer, PgServer, remove, scratch
from tests.polling import wait_for

from taskyard.api.yard import Yard

POOL = 6
WORKERS = 8


@pytest.fixture
def behind_bouncer() -> Iterator[tuple[PgServer, PgBouncer, Daemons]]:
    if not Path(PGBOUNCER).exists():
        pytest.fail(f"not installed: {PGBOUNCER} (make test installs it)")
    folder = scratch("taskyard-pgbouncer-")
    server = PgServer.create(folder / "pg", {"max_connections": "20"})
    bouncer = PgBouncer(folder / "pgbouncer", server, pool_size=POOL)
    daemons = Daemons(folder)
    try:
        bouncer.start()
        yield server, bouncer, daemons
    finally:
        codes = daemons.stop()
        bouncer.stop()
        server.stop()
        if any(codes.values()):
            print(daemons.logs())
        remove(folder)


def _server_connections(server: PgServer) -> int:
    with psycopg.connect(server.url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                           "'client backend' AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else -1


def test_a_fleet_runs_through_pgbouncer_in_transaction_mode(
        behind_bouncer: tuple[PgServer, PgBouncer, Daemons]) -> None:
    server, bouncer, daemons = behind_bouncer
    pooled = bouncer.url + "?pool_mode=transaction"
    root = ["--db", pooled, "--listen-db", server.url, "--shared-listener"]
    daemons.run("--db", pooled, "init")
    daemons.run("--db", pooled, "task-type", "add", "echo", "--handler",
                "python:handlers_for_tests:echo")
    daemons.start("scheduler", *root, "scheduler", "--max-db-connections", "2")
    for i in range(WORKERS):
        daemons.start(f"worker-{i}", *root, "worker", "--name", f"w{i}", "--capacity", "1",
                      "--max-db-connections", "2")
    yard = Yard(pooled)
    try:
        wait_for("the workers to register", lambda: len(
            [w for w in yard.workers() if w.state == "active"]) == WORKERS, timeout=120)
        # Enough of each statement on each long-lived connection that psycopg would
        # have prepared them (after 5): through a transaction pooler that fails.
        ids = [yard.submit("echo", {"n": n}) for n in range(150)]
        ids += yard.submit_many("echo", [{"n": n} for n in range(150, 300)])
        # Transaction-scoped advisory locks: a unique key and a graph's submission. The
        # key held for an hour whatever the job's state: without unique_for, a job that
        # ended before the second submit frees its key (stop 50's full run saw it).
        ids.append(yard.submit("echo", {"n": "u"}, unique_key="once", unique_for="1h"))
        again = yard.submit("echo", {"n": "u"}, unique_key="once", unique_for="1h")
        graph = yard.submit_graph({"tasks": {
            "a": {"type": "echo", "args": {"n": "a"}},
            "b": {"type": "echo", "args": {"n": "b"}, "requires": ["a"]}}})
        for job_id in ids:
            assert yard.wait(job_id, 120).state == "succeeded", daemons.logs()
        assert again == ids[-1]
        assert yard.wait_graph(graph, 120).state == "finished"
        used = {w.name for w in yard.workers()} & {
            yard.get_job(j).worker for j in ids}
        assert len(used) > 1  # the work spread over the fleet
        # The server saw the pooler's connections and the one shared listener, not two
        # per daemon (19 here: the server would have refused them).
        assert _server_connections(server) <= POOL + 1
        assert daemons.alive() == list(daemons.procs)
        clients = [row for row in bouncer.admin("SHOW CLIENTS") if "taskyard" in row[:4]]
        assert len(clients) >= WORKERS + 1  # every daemon talks to the pooler
    finally:
        yard.close()
    codes = daemons.stop()
    assert set(codes.values()) == {0}, daemons.logs()
    for name in daemons.procs:
        assert "Traceback" not in daemons.log(name), daemons.log(name)


def test_without_a_listening_url_the_daemons_poll_and_say_so(
        behind_bouncer: tuple[PgServer, PgBouncer, Daemons]) -> None:
    server, bouncer, daemons = behind_bouncer
    pooled = bouncer.url + "?pool_mode=transaction"
    daemons.run("--db", pooled, "init")
    daemons.run("--db", pooled, "task-type", "add", "echo", "--handler",
                "python:handlers_for_tests:echo")
    daemons.start("scheduler", "--db", pooled, "scheduler")
    daemons.start("worker", "--db", pooled, "worker", "--capacity", "1")
    out = daemons.run("--db", pooled, "submit", "echo", "--args", json.dumps({"n": 1}))
    job_id = int(out.strip())
    yard = Yard(pooled)
    try:
        assert yard.wait(job_id, 60).state == "succeeded"
    finally:
        yard.close()
    for name in ("scheduler", "worker"):
        wait_for(f"{name}'s log line", lambda n=name: "event=listen-polling" in daemons.log(n))
    with psycopg.connect(server.url, autocommit=True) as conn:
        listening = conn.execute("SELECT count(*) FROM pg_stat_activity "
                                 "WHERE query LIKE 'LISTEN%'").fetchone()
    assert listening == (0,)
    assert os.path.exists(bouncer.folder / "pgbouncer.log")
