"""The database work per job of a PostgreSQL system, W1 and W2 shapes: statements,
transactions and client round trips, counted on the wire by :mod:`bench.wire` (every
connection of the run goes through its proxy), with ``pg_stat_statements``' top-level
statements of the same windows as a profile (its ``track`` is set to ``top`` for the
run, and reset to the cluster's ``none`` after it). The machine's load hardly changes
these counts: they say what each system's rate becomes when the database is a network
hop away.

W1 (``part="W1"``): on a fresh database, ``calls`` jobs enqueued one call per job (a
window), 1,000 through the batch API when there is one (a window), the rest untimed;
then K worker processes, and the completion window from their start until every job
has ended (or the time limit), divided by the jobs that ended in it (counted from the
database by an observer connection that bypasses the proxy).

W2 (``part="W2"``): one worker, warm-up jobs, then ``jobs`` jobs one at a time as in
W2 (the next enqueue 10 ms after a job started; taskyard: and its end recorded), all in
one window; ``latency_round_trips``: the round trips that began between an enqueue call
and its handler's start, per job (what a network hop adds to W2's latency, times RTT).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from bench.peers.common import (
    Ctx,
    _enqueued,
    _wait_alive,
    database_of,
    libpq_dsn,
    pg_url,
    processes,
)
from bench.throughput import W2_IDLE
from bench.wire import Counts, Proxy

BATCH = 1000
OBSERVER = "/* bench observer */ "
"""Marks the harness's own queries (direct connections): left out of the profile."""
PROFILE_ROWS = 12


class Window:
    """Counts on one database between ``start()`` and ``stop(jobs)``."""

    def __init__(self, proxy: Proxy, direct: str, database: str) -> None:
        self.proxy = proxy
        self.database = database
        self.admin = _connect(pg_url(direct, "postgres"))
        self.pgss = _pgss_ready(self.admin)
        self.before = Counts()

    def start(self) -> None:
        if self.pgss:
            self.admin.execute(
                "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database "
                "WHERE datname = %s), 0)", (self.database,))
        self.before = self.proxy.counts(self.database)

    def stop(self, jobs: int) -> dict[str, Any]:
        """Per job (``jobs``: the jobs done in the window), the totals, the profile."""
        got = self.proxy.counts(self.database).minus(self.before)
        row: dict[str, Any] = {"jobs": jobs, "totals": got.as_dict()}
        if jobs > 0:
            row.update({k: round(v / jobs, 4) for k, v in got.as_dict().items()
                        if k in ("round_trips", "statements", "transactions")})
        if self.pgss:
            profile = [{"query": " ".join(q.split())[:200], "calls": calls, "rows": rows,
                        "mean_ms": round(mean, 3)}
                       for q, calls, rows, mean in self.admin.execute(
                           "SELECT query, calls, rows, mean_exec_time FROM "
                           "pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
                           "WHERE d.datname = %s AND s.toplevel AND query NOT LIKE %s "
                           "ORDER BY calls DESC, query",
                           (self.database, f"%{OBSERVER.strip()}%"))]
            row["pg_stat_statements"] = {
                "statements": sum(p["calls"] for p in profile),
                "top": profile[:PROFILE_ROWS]}
        return row

    def close(self) -> None:
        self.admin.close()


def _connect(url: str) -> Any:
    import psycopg  # noqa: PLC0415

    return psycopg.connect(libpq_dsn(url), autocommit=True)


def _pgss_ready(conn: Any) -> bool:
    """Whether ``pg_stat_statements`` is loaded (its view is then made readable)."""
    loaded = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    if "pg_stat_statements" not in loaded:
        return False
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return True


@contextmanager
def tracking(direct: str) -> Iterator[None]:
    """``pg_stat_statements.track = top`` for the run (a new connection sees it before
    anything is counted), back to the cluster's setting after it."""
    admin = pg_url(direct, "postgres")
    with _connect(admin) as conn:
        if "pg_stat_statements" in conn.execute("SHOW shared_preload_libraries").fetchone()[0]:
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'top'")
            conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                with _connect(admin) as probe:
                    if probe.execute("SHOW pg_stat_statements.track").fetchone()[0] == "top":
                        break
                time.sleep(0.05)
    try:
        yield
    finally:
        untrack(direct)


def untrack(direct: str) -> None:
    """Back to the cluster's own ``pg_stat_statements.track`` (the suite calls it after a
    counted run, which may have been killed before its own reset)."""
    with suppress(Exception), _connect(pg_url(direct, "postgres")) as conn:
        conn.execute("ALTER SYSTEM RESET pg_stat_statements.track")
        conn.execute("SELECT pg_reload_conf()")


def run(system: Any, ctx: Ctx, p: dict[str, Any]) -> dict[str, Any]:
    """One counted run (``p["part"]``: ``W1`` or ``W2``) of a PostgreSQL system whose
    connections all go through ``ctx.wire``."""
    assert ctx.wire is not None and ctx.direct, "a counted run needs the wire proxy"
    with tracking(ctx.direct):
        if p["part"] == "W1":
            return w1(system, ctx, p["jobs"], p["calls"], workers=p["workers"],
                      timeout=p["timeout"])
        return w2(system, ctx, p["jobs"], p["warmup"], p["timeout"])


def _observer(system: Any, ctx: Ctx) -> tuple[str, Any]:
    database = database_of(system.url)
    assert database and ctx.direct
    return database, _connect(pg_url(ctx.direct, database))


def _remaining(observer: Any, system: Any) -> int:
    return int(observer.execute(OBSERVER + system.remaining_sql).fetchone()[0])


def w1(system: Any, ctx: Ctx, n: int, calls: int, *, workers: int,
       timeout: float) -> dict[str, Any]:
    system.reset()
    database, observer = _observer(system, ctx)
    window = Window(ctx.wire, str(ctx.direct), database)
    row: dict[str, Any] = {"part": "W1", "jobs": n, "workers": workers}
    first, last = ctx.tmp / "first", ctx.tmp / "last"
    try:
        system.enqueue_stamp(str(first))
        calls = min(calls, n - 2)
        window.start()
        system.enqueue_noops(calls, batch=False)
        row["enqueue_call"] = window.stop(calls)
        rest = n - 2 - calls
        if system.batch_api and rest > 0:
            k = min(BATCH, rest)
            window.start()
            system.enqueue_noops(k, batch=True)
            row["enqueue_batch"] = window.stop(k)
            rest -= k
        if rest:
            if system.batch_api:
                system.enqueue_noops(rest, batch=True)
            else:
                system.fill(rest)
        system.enqueue_stamp(str(last))
        system.settle()
        left = _remaining(observer, system)
        with processes(ctx, system.env()) as procs:
            window.start()  # the workers' start-up included: a small job's window is empty
            system.start_workers(procs, workers, "W1")  # by its first stamp (taskyard's)
            began = _wait_alive(procs, first, 120)
            try:
                _wait_alive(procs, last, timeout)
                row["status"] = "ok"
            except TimeoutError:
                row["status"] = "timeout"
            # The last job can start while another worker still holds jobs: the window
            # closes once every job has ended (or at the limit).
            while (rest := _remaining(observer, system)) and time.time() < began + timeout:
                procs.check_alive()
                time.sleep(0.005)
            done = left - rest
            row["complete"] = window.stop(done)
    finally:
        window.close()
        observer.close()
        system.close()
    return row


def w2(system: Any, ctx: Ctx, m: int, warmup: int, timeout: float) -> dict[str, Any]:
    system.reset()
    database, observer = _observer(system, ctx)
    window = Window(ctx.wire, str(ctx.direct), database)
    row: dict[str, Any] = {"part": "W2", "jobs": m, "status": "ok"}
    spans: list[tuple[float, float]] = []
    deadline = time.monotonic() + timeout
    settle = getattr(system, "after_start", None)
    try:
        with processes(ctx, system.env()) as procs:
            system.start_workers(procs, 1, "W2")
            _wait_alive(procs, _enqueued(system, ctx.tmp / "ready"), 120)
            for i in range(m + warmup):
                if i == warmup:
                    window.start()
                path = ctx.tmp / f"lat{i}"
                before = time.time()
                system.enqueue_stamp(str(path))
                try:
                    began = _wait_alive(procs, path, max(0.1, deadline - time.monotonic()))
                    if settle:
                        settle(observer, deadline)
                except TimeoutError:
                    row["status"] = "timeout"
                    break
                if i >= warmup:
                    spans.append((before, began))
                time.sleep(W2_IDLE)
            row.update(window.stop(len(spans)))
        if spans:
            on_path = sum(ctx.wire.turns_between(database, a, b) for a, b in spans)
            row["latency_round_trips"] = round(on_path / len(spans), 4)
    finally:
        window.close()
        observer.close()
        system.close()
    return row


def proxied(ctx: Ctx, pg: str, rtt_ms: float = 0.0) -> Proxy:
    """Point ``ctx.pg`` at a new proxy in front of ``pg`` (``ctx.direct`` keeps ``pg``),
    adding ``rtt_ms`` of round trip (half each way)."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    target = urlsplit(pg)
    proxy = Proxy((target.hostname or "127.0.0.1", target.port or 5432), rtt_ms / 2000)
    ctx.wire, ctx.direct, ctx.pg = proxy, pg, proxy.url(pg)
    return proxy

