"""Fleet benchmark: N single-slot workers and 2 schedulers on one PostgreSQL.

Per worker count (10, 50, 200 by default), on a fresh throwaway cluster:

- **at rest**: the connections held (``pg_stat_activity``, each daemon named by
  ``PGAPPNAME``), then over a window of idle seconds the database's statements/s
  (``pg_stat_statements``), transactions/s, and the CPU of the server's processes and
  of the daemons (``/proc``), with the window's most called statements;
- **the cycle**: cycles run by the harness while the fleet is idle (the same
  ``schedule()`` the daemons run: it reads every live worker);
- **latency**: after a warm-up (two jobs per worker run to their end), jobs submitted at
  a steady rate (200/s), submit → handler start, the handler's own ``time.time()``
  against the time taken just before ``submit``; also without the first second; the
  kernel threads' CPU meanwhile (the machine's own work, see
  :func:`bench.fleet_probe.kernel_threads`);
- **throughput**: 20,000 no-op jobs due at one instant, completion rate from the first
  start to the last end (database clock), and each worker's share of them (fair share
  = jobs / workers), the schedulers' cycles meanwhile (their DEBUG lines);
- the schedulers' resident memory, the workers' (RSS and PSS: the workers are forks of
  one launcher, see ``bench.fleet_launch``).

``--pooler``: the daemons and the harness's submits go through PgBouncer (transaction
pooling, Debian's pgbouncer) in front of a server with ``max_connections = 50``; with
``--listen-db`` the workers LISTEN on the server directly, else they poll.

The results go to ``--out`` (JSON) and a table on stdout. This is a benchmark, run on a
shared machine: the load average is recorded with each case.

Usage: python -m bench.fleet [--workers 10,50,200] [--jobs 20000] [--rate 200]
       [--seconds 10] [--idle 20] [--pooler [--listen-db]] [--out FILE]
       [--samples FILE] [--narrow N:W]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import psycopg
from tests.fleet.servers import PgBouncer, PgServer, remove, scratch
from tests.polling import wait_for

from bench import fleet_probe as probe

HERE = Path(__file__).resolve().parent.parent
SUBMITTERS = 4
"""Processes that submit the latency phase's jobs (open loop: each at its own times)."""
WARMUP = 1.0
"""Seconds at the latency phase's start reported apart as well (``steady_*`` leave them
out). Without the warm-up (:func:`warm_up`, the submitters' imports) the first jobs of
the phase found every slot's child importing the handler and fresh submitters loading
the submit path, all on the same cores: at 10 workers the first ~40 jobs took 20-120 ms
where the rest took 1-3 ms, and they alone made the phase's p99 (49-59 ms against
8.1-8.5 ms after the first second)."""


def _env(name: str, folder: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, PGAPPNAME=name,
               PYTHONPATH=os.pathsep.join([str(HERE), *[p for p in sys.path if p]]))
    if folder is not None:  # the shared listener's socket: one per case
        env["TASKYARD_RUN_DIR"] = str(folder)
    return env


def _taskyard(url: str, *args: str, listen: str | None = None,
              shared: bool = False) -> list[str]:
    extra = (["--listen-db", listen] if listen else []) + (["--shared-listener"] if shared else [])
    return [sys.executable, "-m", "taskyard", "--db", url, *extra, *args]


def prepare(direct: str) -> None:
    from taskyard.api.yard import Yard  # noqa: PLC0415

    with psycopg.connect(direct, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    yard = Yard(direct)
    yard.init()
    yard.add_task_type("noop", "python:bench.handlers:noop")
    yard.add_task_type("stamp", "python:bench.quick_handlers:stamp")
    yard.close()


def live_workers(direct: str) -> int:
    with psycopg.connect(direct, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM workers WHERE state = 'active' "
                           "AND lease_expires_at > extract(epoch FROM now())").fetchone()
    return int(row[0]) if row else 0


def idle(window: probe.Window, seconds: float) -> dict[str, Any]:
    window.reset()
    first = window.read()
    time.sleep(seconds)
    last = window.read()
    return {**window.rates(first, last), "top": window.top()}


def cycles(url: str, count: int) -> dict[str, Any]:
    """``count`` cycles run here while the fleet idles (one every 50 ms; one the
    schedulers hold is skipped)."""
    from taskyard.scheduler.cycle import schedule  # noqa: PLC0415
    from taskyard.store import open_store  # noqa: PLC0415

    store = open_store(url)
    times: list[float] = []
    try:
        schedule(store, holder="bench")  # connections and statements warmed first
        for _ in range(count * 3):
            started = time.perf_counter()
            report = schedule(store, holder="bench", maintenance_every=0.0)
            if report is not None:
                times.append((time.perf_counter() - started) * 1000)
            if len(times) >= count:
                break
            time.sleep(0.05)
    finally:
        store.close()
    return {"cycles": len(times), "p50_ms": round(probe.percentile(times, 0.5), 2),
            "p99_ms": round(probe.percentile(times, 0.99), 2)}


def submitter(url: str, rate: float, total: int, k: int) -> None:
    """One submitting process of the latency phase (``--submit``): says ``ready`` once
    its imports are done, reads the start time on stdin, then submits jobs k, k + n, ...
    each at its own time (open loop); prints ``{job: time before submit}`` and the
    lateness of each submit as JSON."""
    from taskyard.api.yard import Yard  # noqa: PLC0415

    yard = Yard(url)
    yard.store.now()  # a connection opened before the clock starts
    # The submit path's modules loaded before it too, as in a client that has submitted
    # before (a process's first submit loads the jobs' and the cycle's modules).
    import taskyard.scheduler.cycle  # noqa: PLC0415
    import taskyard.store.transitions.jobs  # noqa: F401, PLC0415
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    sent: dict[int, float] = {}
    late: list[float] = []
    try:
        for i in range(k, total, SUBMITTERS):
            due = start + i / rate
            pause = due - time.time()
            if pause > 0:
                time.sleep(pause)
            before = time.time()
            sent[yard.submit("stamp")] = before
            late.append(before - due)
    finally:
        yard.close()
    print(json.dumps({"sent": sent, "late": late}))


def warm_up(url: str, direct: str, workers: int) -> float:
    """Two ``stamp`` jobs per worker, run to their end before the latency phase: each
    slot's child has imported the handler then, as in a fleet that has run it before.
    Seconds taken."""
    from taskyard.api.yard import Yard  # noqa: PLC0415

    started = time.monotonic()
    yard = Yard(url)
    try:
        ids = yard.submit_many("stamp", [{} for _ in range(2 * workers)])
    finally:
        yard.close()

    def ended() -> bool:
        with psycopg.connect(direct, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM jobs WHERE id = ANY(%s) AND state = "
                               "'succeeded'", (ids,)).fetchone()
        return bool(row and row[0] == len(ids))

    wait_for("the warm-up jobs to end", ended, timeout=120 + workers, every=0.25)
    return round(time.monotonic() - started, 2)


def latency(url: str, direct: str, rate: float, seconds: float,
            window: probe.Window, *, samples: Path | None = None) -> dict[str, Any]:
    """Jobs submitted at ``rate`` per second for ``seconds`` by :data:`SUBMITTERS`
    processes; submit → handler start. With ``samples``, each job's times go to that
    file (JSON lines: id, sent, created, dispatched, started, handler start, worker)."""
    total = int(rate * seconds)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "bench.fleet", "--submit", url, repr(rate), str(total), str(k)],
        env=_env(f"submitter-{k}"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=HERE)
        for k in range(SUBMITTERS)]
    for proc in procs:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("a submitter did not start")
    start = time.time() + 0.5
    window.reset()
    first = window.read()
    kernel = probe.kernel_threads()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(f"{start!r}\n".encode())
        proc.stdin.flush()
    sent: dict[int, float] = {}
    late: list[float] = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120 + seconds * 3)
        doc = json.loads(out)
        sent.update({int(job): t for job, t in doc["sent"].items()})
        late += doc["late"]
    lo, hi = min(sent), max(sent)

    def finished() -> list[tuple[int, Any, Any]] | None:
        with psycopg.connect(direct, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT j.id, j.result, a.worker_id, j.created_at, a.dispatched_at, "
                "a.started_at FROM jobs j JOIN attempts a ON "
                "a.job_id = j.id AND a.attempt = j.attempt WHERE j.id BETWEEN %s AND %s "
                "AND j.type = 'stamp' AND j.state = 'succeeded'", (lo, hi)).fetchall()
        return rows if len(rows) >= len(sent) else None

    rows = wait_for("the latency jobs to end", finished, timeout=120 + seconds, every=0.25)
    busy = window.rates(first, window.read())
    after = probe.kernel_threads()
    kernel_s = {name: after[name] - kernel.get(name, 0.0) for name in after}
    if samples is not None:
        with samples.open("a") as fh:
            for r in sorted(rows, key=lambda r: r[0]):
                if r[0] in sent:
                    fh.write(json.dumps([r[0], sent[r[0]], *(None if v is None else float(v)
                                                              for v in (r[3], r[4], r[5], r[1])),
                                         r[2]]) + "\n")
    times = [(float(r[1]) - sent[r[0]]) * 1000 for r in rows if r[0] in sent]
    steady = [(float(r[1]) - sent[r[0]]) * 1000 for r in rows
              if r[0] in sent and sent[r[0]] >= start + WARMUP]
    spread = sorted(collections.Counter(r[2] for r in rows).values())
    return {"jobs": total, "p50_ms": round(probe.percentile(times, 0.5), 2),
            "p99_ms": round(probe.percentile(times, 0.99), 2),
            "max_ms": round(max(times), 2),
            "steady_p50_ms": round(probe.percentile(steady, 0.5), 2),
            "steady_p99_ms": round(probe.percentile(steady, 0.99), 2),
            "steady_max_ms": round(max(steady), 2),
            "submit_late_p99_ms": round(probe.percentile(late, 0.99) * 1000, 2),
            "workers_used": len(spread), "most_on_one": spread[-1],
            "db_cpu_percent": busy["db_cpu_percent"],
            "statements_per_s": busy["statements_per_s"],
            "connects_per_s": busy["connects_per_s"],
            "daemons_cpu_percent": busy["daemons_cpu_percent"],
            "kernel_threads_cpu_s": round(sum(kernel_s.values()), 2),
            "kernel_thread_busiest": max(kernel_s, key=kernel_s.__getitem__, default=None),
            "phases_ms": _phases(rows, sent),
            "top": window.top(limit=12, order="total_exec_time")}


def _phases(rows: list[tuple[Any, ...]], sent: dict[int, float]) -> dict[str, list[float]]:
    """Where submit → start goes, p50 and p99 of each step (the database's clock for the
    rows' times, the submitter's for ``sent``, the handler's for its start: one machine):
    the submit call until its row's creation, creation to dispatch (placement), dispatch
    to the worker's start of the attempt, that start to the handler's."""
    steps: dict[str, list[float]] = {"submit": [], "placed": [], "picked_up": [], "handler": []}
    for job, result, _, created, dispatched, started in rows:
        if job not in sent or dispatched is None or started is None:
            continue
        for name, low, high in (("submit", sent[job], created),
                                ("placed", created, dispatched),
                                ("picked_up", dispatched, started),
                                ("handler", started, float(result))):
            steps[name].append((float(high) - float(low)) * 1000)
    return {name: [round(probe.percentile(v, 0.5), 2), round(probe.percentile(v, 0.99), 2)]
            for name, v in steps.items() if v}


STALLED = 120.0
"""Seconds without a job of the drain ending before the benchmark gives up on it (a job
stuck running on an idle worker once kept it waiting for its whole deadline)."""


def drain(url: str, direct: str, jobs: int, workers: int,
          window: probe.Window) -> dict[str, Any]:
    """``jobs`` no-op jobs due at one instant (submitted beforehand in batches): the
    completion rate and each worker's share."""
    from taskyard.api.yard import Yard  # noqa: PLC0415

    yard = Yard(url)
    due = time.time() + 3.0 + jobs / 20_000
    ids: list[int] = []
    try:
        for start in range(0, jobs, 1000):
            ids += yard.submit_many("noop", [{}] * min(1000, jobs - start), run_after=due)
    finally:
        yard.close()
    if time.time() > due:
        print(f"fleet: the drain's submit ended {time.time() - due:.1f}s after its jobs "
              "were due", file=sys.stderr)

    lo, hi = min(ids), max(ids)
    with psycopg.connect(direct, autocommit=True) as conn:
        windows = sorted(int(p) for (p,) in conn.execute(
            "SELECT prefetch FROM workers WHERE state = 'active'"))
    window.reset()
    first = window.read()

    progress = [-1, time.monotonic()]  # jobs ended, when that count last moved

    def done() -> bool:
        ended = "type = 'noop' AND state IN ('succeeded', 'failed', 'error')"
        with psycopg.connect(direct, autocommit=True) as conn:
            row = conn.execute(f"SELECT count(*) FROM jobs WHERE id BETWEEN %s AND %s AND {ended}",
                               (lo, hi)).fetchone()
            count = int(row[0]) if row else 0
            if count != progress[0]:
                progress[:] = [count, time.monotonic()]
            elif time.monotonic() - progress[1] > STALLED:  # say which, not wait on
                left = conn.execute(
                    "SELECT id, state, attempt, worker_id FROM jobs WHERE id BETWEEN %s AND %s "
                    f"AND NOT ({ended}) ORDER BY id LIMIT 10", (lo, hi)).fetchall()
                raise RuntimeError(f"fleet: the drain ended no job in {STALLED:.0f}s, "
                                   f"{len(ids) - count} left; (id, state, attempt, worker): "
                                   f"{left}")
        return count >= len(ids)

    wait_for("the drain to end", done, timeout=600 + jobs / 50, every=1.0)
    busy = window.rates(first, window.read())
    with psycopg.connect(direct, autocommit=True) as conn:
        span = conn.execute(
            "SELECT min(started_at), max(finished_at), count(*) FILTER "
            "(WHERE state <> 'succeeded') FROM jobs WHERE id = ANY(%s)", (ids,)).fetchone()
        by_worker = conn.execute(
            "SELECT a.worker_id, count(*), min(w.prefetch) FROM attempts a JOIN workers w "
            "ON w.id = a.worker_id WHERE a.job_id = ANY(%s) GROUP BY a.worker_id",
            (ids,)).fetchall()
    shares = [int(n) for _, n, _ in by_worker]
    # Each worker's share with the window it declared last: do wide windows take more?
    share_window = sorted((int(n), int(w)) for _, n, w in by_worker)
    assert span is not None
    seconds = float(span[1]) - float(span[0])
    shares += [0] * (workers - len(shares))
    fair = jobs / workers
    # From the instant the jobs came due (the server's clock is this machine's): the
    # rate above starts at the first start, after the cycles that placed the burst.
    return {"jobs": jobs, "seconds": round(seconds, 2), "jobs_per_s": round(jobs / seconds),
            "due_to_first_start_s": round(float(span[0]) - due, 2),
            "due_to_last_end_s": round(float(span[1]) - due, 2),
            "not_succeeded": int(span[2]), "share_min": min(shares), "share_max": max(shares),
            "fair_share": round(fair, 1),
            "starved": sum(1 for n in shares if n < fair / 2 or n > fair * 2),
            "db_cpu_s": round(busy["db_cpu_percent"] * busy["seconds"] / 100, 1),
            "daemons_cpu_s": round(busy["daemons_cpu_percent"] * busy["seconds"] / 100, 1),
            "connects_per_s": busy["connects_per_s"],
            "shares": sorted(shares), "windows_before": windows, "share_window": share_window,
            "top": window.top(order="total_exec_time")}


CYCLE_LINE = re.compile(r"event=cycle placed=(\d+) .* ms=([\d.]+)")


def logged_cycles(log: Path, since: int) -> dict[str, Any]:
    """The schedulers' cycles that placed jobs, from their DEBUG lines after byte
    ``since`` of their log."""
    with log.open("rb") as fh:
        fh.seek(since)
        text = fh.read().decode(errors="replace")
    found = [(int(p), float(ms)) for p, ms in CYCLE_LINE.findall(text)]
    ms = [m for _, m in found]
    return {"cycles": len(found), "placed_mean": round(sum(p for p, _ in found) /
                                                     max(1, len(found)), 1),
            "p50_ms": round(probe.percentile(ms, 0.5), 2),
            "p99_ms": round(probe.percentile(ms, 0.99), 2)}


def run_case(workers: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"workers": workers, "pooler": args.pooler,
                           "shared_listener": args.shared_listener,
                           "max_db_connections": args.max_db_connections,
                           "prefetch": args.prefetch, "narrow": args.narrow,
                           "schedulers": args.schedulers,
                           "load_before": [round(x, 1) for x in os.getloadavg()]}
    max_conn = 50 if args.pooler else max(100, 3 * workers + 40)
    with ExitStack() as stack:
        server = PgServer.create(folder / "pg", {
            "max_connections": str(max_conn), "synchronous_commit": "off",
            "shared_preload_libraries": "'pg_stat_statements'",
            "pg_stat_statements.track": "top", "shared_buffers": "256MB",
            "pg_stat_statements.track_planning": "on" if args.track_planning else "off"})
        stack.callback(server.stop)
        direct = server.url
        url, listen = direct, None
        if args.pooler:
            bouncer = PgBouncer(folder / "pgb", server, pool_size=args.pool_size)
            bouncer.start()
            stack.callback(bouncer.stop)
            url = bouncer.url + "?pool_mode=transaction"
            listen = direct if args.listen_db or args.shared_listener else None
        prepare(direct)
        log = folder / "daemons.log"
        out = stack.enter_context(log.open("ab"))
        procs: list[subprocess.Popen[bytes]] = []

        def stop_all() -> None:
            for p in procs:
                with suppress(ProcessLookupError):
                    p.terminate()
            for p in procs:
                try:
                    p.wait(120)
                except subprocess.TimeoutExpired:
                    p.kill()

        stack.callback(stop_all)
        for i in range(args.schedulers):
            procs.append(subprocess.Popen(
                _taskyard(url, "-vv", "scheduler", listen=listen, shared=args.shared_listener),
                env=_env(f"scheduler-{i}", folder),
                stdout=subprocess.DEVNULL, stderr=out, cwd=HERE))
        schedulers = [p.pid for p in procs]
        fleet_cmd = [sys.executable, "-m", "bench.fleet_launch", url, str(workers),
                     *(["--listen-db", listen] if listen else []),
                     *(["--shared-listener"] if args.shared_listener else []),
                     *(["--narrow", args.narrow] if args.narrow else []),
                     "--", "--capacity", "1",
                     *(["--max-db-connections", str(args.max_db_connections)]
                       if args.max_db_connections else []),
                     *(["--prefetch", str(args.prefetch)] if args.prefetch is not None else [])]
        launcher = subprocess.Popen(fleet_cmd, env=_env("launcher", folder),
                                    stdout=subprocess.DEVNULL,
                                    stderr=out, cwd=HERE)
        procs.append(launcher)
        started = time.monotonic()
        wait_for(f"{workers} live workers", lambda: live_workers(direct) >= workers,
                 timeout=120 + 3 * workers)
        row["start_s"] = round(time.monotonic() - started, 1)
        time.sleep(args.settle)
        row["connections"] = probe.connections(direct)
        window = probe.Window(direct, server.postmaster_pid() or 0, [*schedulers, launcher.pid])
        row["idle"] = idle(window, args.idle)
        row["cycle_idle"] = cycles(url, args.cycles)
        row["warm_up_s"] = warm_up(url, direct, workers)
        row["latency"] = latency(url, direct, args.rate, args.seconds, window,
                                 samples=args.samples)
        mark = log.stat().st_size
        row["drain"] = drain(url, direct, args.jobs, workers, window)
        row["cycle_busy"] = logged_cycles(log, mark)
        worker_pids = probe.descendants(launcher.pid)
        row["scheduler_rss_mib"] = round(max(probe.rss_mib(p) or 0 for p in schedulers), 1)
        row["fleet_pss_mib"] = round(probe.pss_mib([launcher.pid, *worker_pids]))
        row["connections_after"] = probe.connections(direct)
        if args.pooler:
            row["pgbouncer"] = {"pools": bouncer.admin("SHOW POOLS")}
        row["load_after"] = [round(x, 1) for x in os.getloadavg()]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table (``make bench``'s report shows it too)."""
    head = ("| workers | conns at rest (most per worker) | idle stmts/s | idle xacts/s "
            "| idle DB CPU % | idle daemons CPU % | cycle idle p50/p99 ms "
            "| submit→start p50/p99 ms (after the 1st s) | DB CPU % at 200 jobs/s | drain jobs/s "
            "| DB CPU ms/job (drain) | share min-max (fair) | scheduler RSS MiB | load "
            "| kernel threads' CPU s in the latency phase (busiest) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r.get('workers', '?')} | failed: {r['error'][:200]} |")
            continue
        c, i, lat, d = r["connections"], r["idle"], r["latency"], r["drain"]
        w = c["by_kind"].get("worker", {})
        how = [x for x, on in (("pgbouncer", r["pooler"]),
                               ("shared listener", r.get("shared_listener")),
                               (f"--prefetch {r.get('prefetch')}",
                                r.get("prefetch") is not None)) if on]
        lines.append(
            f"| {r['workers']}{' (' + ', '.join(how) + ')' if how else ''} | {c['total']} "
            f"({w.get('most', 0)}) | {i['statements_per_s']} | {i['transactions_per_s']} "
            f"| {i['db_cpu_percent']} | {i['daemons_cpu_percent']} "
            f"| {r['cycle_idle']['p50_ms']}/{r['cycle_idle']['p99_ms']} "
            f"| {lat['p50_ms']}/{lat['p99_ms']} ({lat.get('steady_p50_ms', '')}/"
            f"{lat.get('steady_p99_ms', '')}) | {lat.get('db_cpu_percent', '')} "
            f"| {d['jobs_per_s']} | {1000 * d.get('db_cpu_s', 0) / d['jobs']:.2f} "
            f"| {d['share_min']}-{d['share_max']} ({d['fair_share']}) "
            f"| {r['scheduler_rss_mib']} | {r['load_before'][0]} "
            f"| {lat.get('kernel_threads_cpu_s', '')} ({lat.get('kernel_thread_busiest', '')}) |")
    return "\n".join(lines)


def in_suite(workers: str, out: Path, timeout: float) -> list[dict[str, Any]]:
    """``make bench``'s fleet rows: this benchmark in a process of its own (its own
    clusters), killed past ``timeout`` seconds; a failure is a row that says so."""
    path = out / "fleet.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *[p for p in sys.path if p]]))
    try:
        done = subprocess.run([sys.executable, "-m", "bench.fleet", "--workers", workers,
                               "--shared-listener", "--out", str(path)], cwd=HERE, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
        error = None if done.returncode == 0 else (done.stderr.strip()[-300:] or "failed")
    except subprocess.TimeoutExpired:
        error = f"killed after {timeout:.0f}s"
    rows: list[dict[str, Any]] = json.loads(path.read_text()) if path.exists() else []
    if error:
        rows.append({"error": error})
    return rows


def markdown(rows: list[dict[str, Any]] | None) -> list[str]:
    """The report's section (nothing when the suite ran no fleet)."""
    if not rows:
        return []
    return ["## Fleet: single-slot workers and 2 schedulers on one PostgreSQL", "",
            "`python -m bench.fleet --shared-listener` (see its docstring): per worker count, "
            "the connections held at rest, the idle load, the cycle, submit→start at a "
            "steady 200 jobs/s, a drain of 20,000 no-op jobs. Everything shares this "
            "machine's cores (workers, schedulers, the server, the harness): the latency "
            "and drain figures say more about the machine than about the fleet beyond a "
            "few dozen workers; the idle figures and the per-job database CPU do not.",
            "", table(rows), ""]


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--submit"]:
        url, rate, total, k = sys.argv[2:6]
        submitter(url, float(rate), int(total), int(k))
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", default="10,50,200")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--idle", type=float, default=20.0, help="idle window, seconds")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--pooler", action="store_true")
    parser.add_argument("--pool-size", type=int, default=40)
    parser.add_argument("--listen-db", action="store_true",
                        help="with --pooler: LISTEN on the server directly")
    parser.add_argument("--shared-listener", action="store_true",
                        help="the daemons LISTEN through one shared connection")
    parser.add_argument("--max-db-connections", type=int,
                        help="each worker's --max-db-connections")
    parser.add_argument("--prefetch", type=int, help="each worker's --prefetch")
    parser.add_argument("--narrow", metavar="N:W",
                        help="the first N workers with --prefetch W (see bench.fleet_launch)")
    parser.add_argument("--schedulers", type=int, default=2,
                        help="scheduler daemons (the report's rows assume 2)")
    parser.add_argument("--track-planning", action="store_true",
                        help="count plans and planning time in the statements' profiles")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--samples", type=Path,
                        help="append each latency job's times to this file (JSON lines)")
    args = parser.parse_args(argv)
    rows = []
    for n in [int(x) for x in args.workers.split(",")]:
        folder = scratch(f"pg-fleet-{n}-")
        try:
            row = run_case(n, args, folder)
        finally:
            if args.out and (folder / "daemons.log").exists():
                # The daemons' log beside the figures (the schedulers' DEBUG lines).
                shutil.copy(folder / "daemons.log", f"{args.out}.{n}.log")
            remove(folder)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
