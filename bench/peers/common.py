"""What every system's benchmark shares: the run context, fresh databases, the W1/W2/W4
methodology (the same as ``bench.throughput`` and ``bench.graphs`` for taskyard) and the
process handling (own session, RSS sampling, everything killed at the end)."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from bench import rss
from bench.graphs import build, edges, handoff_stats, read_records, record_delays
from bench.throughput import W2_IDLE, latency_row, wait_file

HERE = Path(__file__).resolve().parent.parent.parent


class CannotExpress(Exception):
    """The system has no way to express this workload (the reason is the message)."""


@dataclass
class Ctx:
    """Where a run may put things: the throwaway PostgreSQL cluster's admin URL, the
    redis-server's URL, and a scratch folder that the run owns; ``wire``: the proxy
    ``pg`` then points at (bench.wire), ``direct``: the cluster's own URL behind it."""

    pg: str | None
    redis: str | None
    tmp: Path
    wire: Any = None
    direct: str | None = None


# URLs are taken apart with urllib, not SQLAlchemy's make_url: a peer's run never
# imports SQLAlchemy, whose 11-14 MiB would count in its W3 dequeuer's memory.
def pg_url(admin: str, database: str) -> str:
    return urlunsplit(urlsplit(admin)._replace(path=f"/{database}"))


def database_of(url: str) -> str | None:
    """The database a PostgreSQL URL names (None: none)."""
    return unquote(urlsplit(url).path.lstrip("/")) or None


def run_db(admin: str, system: str) -> str:
    """The URL of a system's own database, ``<database of admin>_<system>``: the admin
    URL's database names the run (it need not exist); the cluster must trust us."""
    return pg_url(admin, f"{database_of(admin) or 'bench'}_{system}")


def libpq_dsn(url: str) -> str:
    """``postgresql://user@host:port/db`` for libpq clients (no SQLAlchemy driver)."""
    return urlunsplit(urlsplit(url)._replace(scheme="postgresql"))


def recreate_pg(url: str) -> None:
    """Drop and create the URL's database (the cluster is throwaway and trusts us)."""
    import psycopg  # noqa: PLC0415

    database = database_of(url)
    admin = libpq_dsn(pg_url(url, "postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')


def settle_pg(url: str) -> None:
    """``VACUUM (ANALYZE)`` the URL's database: a filled backlog as autovacuum would
    leave it, so that autovacuum does not vacuum it during the timed part (on 2 cores a
    vacuum of a million rows takes one of them)."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(libpq_dsn(url), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def drop_run_databases(admin: str) -> None:
    """Drop the databases of a run's systems (``<database of admin>_*``, see
    :func:`run_db`): what one run leaves behind must not be vacuumed while the next one
    runs."""
    import psycopg  # noqa: PLC0415

    prefix = f"{database_of(admin) or 'bench'}_"
    with psycopg.connect(libpq_dsn(pg_url(admin, "postgres")), autocommit=True) as conn:
        names = [name for (name,) in conn.execute(
            "SELECT datname FROM pg_database WHERE left(datname, %s) = %s",
            (len(prefix), prefix))]
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def remove_sqlite(path: str | Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", ".cycle-lock", ".write-lock"):
        with suppress(FileNotFoundError):
            os.remove(f"{path}{suffix}")


def bench_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process a run starts: the repository on the path."""
    path = os.pathsep.join([str(HERE), *[p for p in sys.path if p]])
    return dict(os.environ, PYTHONPATH=path, **(extra or {}))


class Procs:
    """Processes started for one run, sampled for peak RSS, and all stopped at the end
    whatever happens: SIGTERM, then SIGKILL for every process of their trees. They stay
    in the run's process group, so the suite's timeout kills them with the run."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.procs: list[subprocess.Popen[bytes]] = []
        self.sampler = rss.TreeSampler()

    def start(self, group: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as err:
            proc = subprocess.Popen(cmd, env=self.env, cwd=HERE, stdout=err, stderr=err)
        self.procs.append(proc)
        self.sampler.add(group, proc.pid)
        return proc

    def stop(self, grace: float = 2.0) -> None:
        # Everything is measured by now: a worker that is still busy (Celery's, with a
        # 100,000-job fan-out queued, ignores SIGTERM for the whole grace) is killed
        # after ``grace`` seconds rather than waited for (until run 47: 5 s).
        self.sampler.sample()
        tree = rss.descendants([p.pid for p in self.procs])
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for p in self.procs:
            with suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
        for pid in tree | rss.descendants([p.pid for p in self.procs]):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for p in self.procs:
            p.wait()

    def check_alive(self) -> None:
        for p in self.procs:
            if p.poll() is not None:
                tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
                raise RuntimeError(f"{p.args!r} exited with {p.returncode}: {tail}")


@contextmanager
def processes(ctx: Ctx, env: dict[str, str] | None = None) -> Iterator[Procs]:
    procs = Procs(bench_env(env), ctx.tmp / "daemons.log")
    procs.sampler.start()
    try:
        yield procs
    finally:
        procs.sampler.stop()
        procs.stop()


class Peer:
    """A peer's adapter: the hooks below, and the shared methodology in w1/w2/w4."""

    name = "peer"
    batch_api: str | None = None  # the batch enqueue API, None when there is none

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx

    # --- hooks -----------------------------------------------------------------------
    def reset(self) -> None:
        """Fresh, empty storage."""
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """Environment variables the peer's app module reads (in this process too)."""
        return {}

    def enqueue_stamp(self, path: str) -> None:
        raise NotImplementedError

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        raise NotImplementedError

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        raise NotImplementedError

    def pending(self) -> int | None:
        """Jobs still waiting in the queue (for a timed-out run's partial rate)."""
        return None

    def close(self) -> None:
        """Release client connections."""

    def cannot(self, shape: str, n: int) -> str | None:
        """Why the peer cannot express this W4 graph, or None when it can (the suite asks
        before it starts a run)."""
        return "no task-graph primitive"

    def submit_graph(self, shape: str, n: int, out: str) -> None:
        raise NotImplementedError

    def fill(self, n: int) -> None:
        """n no-op jobs into the queue, untimed, by the fastest way there is."""
        raise NotImplementedError

    def settle(self) -> None:
        """After a fill, untimed: PostgreSQL storage is vacuumed and analysed (see
        :func:`settle_pg`)."""

    def take(self, k: int) -> int:
        """Hand out ``k`` jobs through the peer's own dequeue path; returns how many."""
        raise NotImplementedError

    def config(self) -> dict[str, str]:
        return {}

    # --- methodology -----------------------------------------------------------------
    def apply_env(self) -> None:
        os.environ.update(self.env())

    def w1(self, n: int, workers: int, *, batch: bool, timeout: float,
           enqueue_limit: float | None = None) -> dict[str, Any]:
        self.reset()
        mode = ("one call per job" if not batch else "batch" if self.batch_api
                else "bulk fill (untimed)")
        row: dict[str, Any] = {"workload": "W1", "jobs": n, "workers": workers,
                               "enqueue": mode}
        first_path, last_path = self.ctx.tmp / "first", self.ctx.tmp / "last"
        rate, timed = self._enqueue(n, (first_path, last_path), batch, enqueue_limit)
        if rate is not None:
            row.update(enqueue_per_s=round(rate, 1), enqueue_timed_jobs=timed)
        self.settle()  # untimed: the queue's tables as autovacuum leaves them (W3 too)
        with processes(self.ctx, self.env()) as procs:
            self.start_workers(procs, workers, "W1")
            first = _wait_alive(procs, first_path, 120)
            try:
                last = _wait_alive(procs, last_path, timeout)
                row.update(status="ok", complete_per_s=round((n - 1) / (last - first), 1))
            except TimeoutError:
                left = self.pending()
                row["status"] = "timeout"
                if left is not None:
                    done = n - left
                    row.update(done=done, complete_per_s_partial=round(
                        (done - 1) / (time.time() - first), 1))
            procs.sampler.sample()
            row["rss_mb"] = procs.sampler.peak_mb()
            row["processes"] = procs.sampler.breakdown()
        self.close()
        return row

    def _enqueue(self, n: int, stamps: tuple[Path, Path], batch: bool,
                 limit_s: float | None) -> tuple[float | None, int]:
        """As ``bench.throughput.enqueue``: stamp, n - 2 no-ops, stamp; past ``limit_s``
        the rest goes in untimed (batch API, else ``fill``). Returns (jobs/s, jobs timed).
        A batch run of a peer without a batch API fills the queue in bulk, untimed."""
        if batch and self.batch_api is None:
            self.enqueue_stamp(str(stamps[0]))
            self.fill(n - 2)
            self.enqueue_stamp(str(stamps[1]))
            return None, 0
        started = time.perf_counter()
        self.enqueue_stamp(str(stamps[0]))
        done, chunk = 0, 1000 if batch else 100
        while done < n - 2:
            k = min(chunk, n - 2 - done)
            self.enqueue_noops(k, batch=batch)
            done += k
            if limit_s is not None and time.perf_counter() - started > limit_s:
                break
        timed = done + 1
        if done == n - 2:
            self.enqueue_stamp(str(stamps[1]))
            timed += 1
        rate = timed / (time.perf_counter() - started)
        if done < n - 2:
            if self.batch_api is not None:
                self.enqueue_noops(n - 2 - done, batch=True)
            else:
                self.fill(n - 2 - done)
            self.enqueue_stamp(str(stamps[1]))
        return rate, timed

    def w2(self, m: int, warmup: int, timeout: float) -> dict[str, Any]:
        self.reset()
        samples: list[float] = []
        status = "ok"
        deadline = time.monotonic() + timeout
        with processes(self.ctx, self.env()) as procs:
            self.start_workers(procs, 1, "W2")
            try:  # wait until the worker really serves (start-up excluded)
                _wait_alive(procs, _enqueued(self, self.ctx.tmp / "ready"), 120)
                for i in range(m + warmup):
                    path = self.ctx.tmp / f"lat{i}"
                    before = time.time()
                    self.enqueue_stamp(str(path))
                    began = _wait_alive(procs, path, max(0.1, deadline - time.monotonic()))
                    if i >= warmup:
                        samples.append((began - before) * 1000)
                    time.sleep(W2_IDLE)  # let the worker finish its bookkeeping: idle again
            except TimeoutError:
                status = "timeout"
        self.close()
        return latency_row(samples, m, status)

    def w4(self, shape: str, n: int, timeout: float) -> dict[str, Any]:
        reason = self.cannot(shape, n)
        if reason:
            raise CannotExpress(reason)
        self.reset()
        out = self.ctx.tmp / "records"
        out.mkdir(exist_ok=True)
        doc = build(shape, n)
        final = {"chain": f"t{n - 1}", "fanout": "join"}.get(shape, "")
        row: dict[str, Any] = {"shape": shape, "jobs": n}
        with processes(self.ctx, self.env()) as procs:
            self.start_workers(procs, 2, "W4")
            # workers up first, as for taskyard whose graph waits in the database
            _wait_alive(procs, _enqueued(self, self.ctx.tmp / "ready"), 120)
            started = time.perf_counter()
            self.submit_graph(shape, n, str(out))
            row["submit_s"] = round(time.perf_counter() - started, 4)
            submitted_at = time.time()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                procs.check_alive()
                if _has_label(out, final):
                    row["status"] = "ok"
                    break
                time.sleep(0.05)
            else:
                row["status"] = "timeout"
            procs.sampler.sample()
            row["rss_mb"] = procs.sampler.peak_mb()
        self.close()
        recs = read_records(out)
        row["succeeded"] = len(recs)
        if row["status"] == "ok":
            e2e = max(end for _, end in recs.values()) - submitted_at
            row.update(end_to_end_s=round(e2e, 2), jobs_per_s=round(n / e2e, 1))
        else:
            row["jobs_per_s_partial"] = round(len(recs) / timeout, 1)
        row.update(handoff_stats(record_delays(edges(doc), recs)))
        return row

    def w3(self, n: int, cycles: int, slots: int = 50) -> dict[str, Any]:
        self.reset()
        started = time.perf_counter()
        self.fill(n)
        fill_s = time.perf_counter() - started
        self.settle()
        times: list[float] = []
        taken: list[int] = []
        rss.reset_peak()
        for _ in range(cycles):
            t0 = time.perf_counter()
            taken.append(self.take(slots))
            times.append(time.perf_counter() - t0)
        peak = rss.hwm_kb("self")
        self.close()
        return {"pending": n, "fill_s": round(fill_s, 2), "cycles": cycles,
                "placed_per_cycle": statistics.median(taken),
                "cycle_ms_median": round(statistics.median(times) * 1000, 3),
                "cycle_ms_min": round(min(times) * 1000, 3),
                "cycle_ms_max": round(max(times) * 1000, 3),
                "rss_mb": {"dequeuer": round(peak / 1024, 1) if peak else None}}


def _enqueued(peer: Peer, path: Path) -> Path:
    peer.enqueue_stamp(str(path))
    return path


def _wait_alive(procs: Procs, path: Path, timeout: float) -> float:
    """wait_file, failing fast when a worker process died."""
    deadline = time.monotonic() + timeout
    while True:
        procs.check_alive()
        try:
            return wait_file(path, min(1.0, max(0.0, deadline - time.monotonic())))
        except TimeoutError:
            if time.monotonic() >= deadline:
                raise


def _has_label(out: Path, label: str) -> bool:
    marker = out / f"{label}.done"
    return marker.exists()

