"""The benchmark suite: taskyard against procrastinate, PgQueuer, huey, Celery, Airflow.

Every (system, workload) measurement runs in its own process (``bench.run_one``) with a
hard timeout; the repetition is the outer loop and the systems are interleaved (their
order rotates from one repetition to the next). A failed, timed-out or killed run is
recorded as such and the suite goes on. Results: ``OUT/raw/<timestamp>.json`` (every
run), ``OUT/latest.json`` (aggregates), ``OUT/latest.md`` (the tables) and, when
matplotlib is installed, ``OUT/throughput.png``, ``OUT/latency_cdf.png``,
``OUT/backlog.png``.

Usage: python -m bench.suite [--profile full|smoke] [--pg ADMIN_URL] [--redis URL]
       [--systems a,b,...] [--reps N] [--budget SECONDS] [--out DIR] [--no-plots]
       [--rtt MS]
Systems that need a server that was not given (--pg, --redis) are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import budget as budget_of
from bench import host
from bench.dbwork import untrack
from bench.peers import NEEDS, SYSTEMS
from bench.peers.airflow_peer import installed as airflow_installed
from bench.peers.common import drop_run_databases
from bench.run_one import MARK

HERE = Path(__file__).resolve().parent.parent
SHAPES = ("chain", "fanout", "random")
LEAN = "K=2 lean"
"""The W1 cell of taskyard deployed as huey's ``-w 2`` is: 2 workers of one slot each
(``--capacity 1``: two jobs at once, as huey's two worker processes and Celery's two
solo workers run; the default is one slot per CPU, four jobs at once here), the
scheduler in the first (``worker --scheduler``, as huey's consumer schedules) and no
scheduler process. Until run 47 two cells stood for it: the scheduler in a worker at
the default capacity, and one slot each beside a scheduler process."""
TASKYARD_ONLY = (LEAN,)
DB_WARMUP = 5  # W2 jobs run before a counted W2 window opens


def counted(system: str) -> bool:
    """Whether the database work per job is counted for ``system`` (PostgreSQL, and a
    W1/W2 to count: Airflow runs W4 only)."""
    return system.endswith("-pg") and system != "airflow-pg"


@dataclass(frozen=True)
class Profile:
    name: str
    reps: int
    w1_jobs: int
    w1_runs: tuple[tuple[int, bool], ...]  # (worker processes, batch enqueue) per run
    w1_timeout: float  # completion phase, from the first stamp
    w1_enqueue_limit: float | None  # timed enqueue phase; the rest goes in untimed
    w2_jobs: int
    w2_warmup: int
    w2_timeout: float
    w3_sizes: tuple[int, ...]
    w3_once: tuple[int, ...]  # sizes measured in the first repetition only
    w3_cycles: int
    w4_sizes: tuple[int, ...]
    w4_once: tuple[int, ...]
    w4_shapes: tuple[str, ...]
    w4_timeout: dict[int, float]
    budget: float | None  # seconds for the whole suite; later runs are skipped
    systems: tuple[str, ...] = tuple(SYSTEMS)
    # The HTTP API (taskyard only, bench.http): jobs POSTed, connections, latency jobs.
    http: tuple[int, int, int] | None = None
    # W4 graphs small enough for Airflow (its own venv, W4 only: these cells, first
    # repetition): (shape, jobs) and their time limit; every other system runs them in
    # every repetition.
    w4_small: tuple[tuple[str, int], ...] = ()
    w4_small_timeout: float = 60.0
    # A chain's own limit where it differs from w4_timeout (a chain never ends sooner).
    w4_chain_timeout: dict[int, float] = field(default_factory=dict)
    # taskyard's W1 with 2 workers once more, deployed as huey's `-w 2` (see LEAN).
    w1_lean: bool = False
    # The database work per job (bench.dbwork), PostgreSQL systems, first repetition:
    # (W1 jobs, of them enqueued one call per job, W2 jobs, W1 completion limit).
    db: tuple[int, int, int, float] | None = None


PROFILES = {
    "full": Profile(
        # Three repetitions of every cell (~6.5-8 min each on 2 cores) but Airflow's graphs.
        # A 100,000-job graph cannot finish within any bench-sized limit (a chain is 100,000
        # hand-offs in a row): its run measures the submit and the hand-offs of what ran in
        # the first 3 s; a chain of 10,000 cannot either (~3 ms a hand-off): 3 s of it as
        # well. Until run 42 both windows were 5 s and W1's completion limit 8 s (only the
        # slowest peers reach it), and Airflow's graphs had 30 s: runs 39-42 spent the
        # 26 minutes before the last repetition's biggest graphs. Those limits gave back
        # about two minutes; runs 43-47 still took 22-26 min (skipping up to 6 runs of the
        # last repetition), so from run 48 Airflow's graphs have 15 s (they ran 14-36
        # tasks in 20 s, 15-39 in 15 s) and taskyard's two extra W1 cells are one (see
        # LEAN): runs 48-50 took 20.2-20.8 min, nothing skipped. From run 51 the first
        # repetition also counts each PostgreSQL system's database work per job (bench.
        # dbwork, 8 runs of 6-30 s: about 1.5 min more).
        name="full", reps=3, w1_jobs=10_000, w1_runs=((1, False), (2, True)), w1_timeout=6,
        w1_enqueue_limit=2, w2_jobs=200, w2_warmup=10, w2_timeout=60,
        w3_sizes=(10_000, 100_000, 1_000_000), w3_once=(), w3_cycles=15,
        w4_sizes=(10_000, 100_000), w4_once=(), w4_shapes=SHAPES,
        w4_timeout={10_000: 20, 100_000: 3}, w4_chain_timeout={10_000: 3},
        budget=26 * 60, http=(6000, 16, 100), w1_lean=True, db=(10_000, 200, 50, 15),
        # Airflow's graphs: 15 s each (Airflow runs 1-2 tasks/s here, see airflow_peer).
        w4_small=(("chain", 100), ("fanout", 1_000), ("random", 1_000)), w4_small_timeout=15),
    "smoke": Profile(
        name="smoke", reps=1, w1_jobs=40, w1_runs=((1, False),), w1_timeout=30,
        w1_enqueue_limit=None, w2_jobs=8,
        w2_warmup=2, w2_timeout=30, w3_sizes=(200, 2_000), w3_once=(), w3_cycles=3,
        w4_sizes=(20,), w4_once=(), w4_shapes=("fanout",), w4_timeout={20: 30}, budget=None,
        systems=("taskyard-sqlite", "taskyard-pg"), http=(200, 4, 3), w1_lean=True,
        db=(40, 10, 4, 30)),
}


@dataclass
class Run:
    rep: int
    system: str
    workload: str
    cell: str  # what the run measures, e.g. "K=1 per call", "100000", "chain 10000"
    params: dict[str, Any]
    soft: float  # the workload's own timeout (a run that hits it reports partial figures)
    hard: float  # the suite kills the run past this
    result: dict[str, Any] = field(default_factory=dict)


def plan(profile: Profile, systems: list[str], reps: int) -> list[Run]:
    """Repetition outer, then workload and cell, then the systems in an order that
    rotates with the repetition. The sizes measured once come right after the first
    repetition, before the second: a budget that runs out cuts repetitions first."""
    p = profile

    def cells(rep: int, once: bool) -> list[tuple[str, str, dict[str, Any], float, float]]:
        found: list[tuple[str, str, dict[str, Any], float, float]] = []
        if not once:
            limit = p.w1_enqueue_limit
            soft = p.w1_timeout + (limit or 0)
            w1 = [(f"K={workers}", {"workers": workers, "batch": batch})
                  for workers, batch in p.w1_runs]
            if p.w1_lean:
                w1.append((LEAN, {"workers": 2, "batch": True, "inproc": True,
                                  "capacity": 1}))
            for cell, how in w1:
                found.append(("W1", cell, {"jobs": p.w1_jobs, **how, "timeout": p.w1_timeout,
                                           "enqueue_limit": limit},
                              soft, soft + (limit or p.w1_jobs / 100) + 90))
            found.append(("W2", "latency", {"jobs": p.w2_jobs, "warmup": p.w2_warmup,
                                            "timeout": p.w2_timeout}, p.w2_timeout,
                          p.w2_timeout + 90))
            if p.http:
                jobs, clients, count = p.http
                found.append(("HTTP", "api", {"jobs": jobs, "clients": clients,
                                              "latency": count}, 10 + jobs / 200 + count / 50,
                              120 + jobs / 20 + count / 5))
        for shape, n in () if once else p.w4_small:
            t = p.w4_small_timeout
            found.append(("W4", f"{shape} {n}", {"shape": shape, "jobs": n, "timeout": t},
                          t + n / 5_000, t + 90 + n / 1_000))
        if once and p.db:
            jobs, calls, m, limit = p.db
            found.append(("DB", "W1", {"part": "W1", "jobs": jobs, "calls": calls,
                                       "workers": 2, "timeout": limit},
                          limit + 10 + jobs / 2_000, limit + 120 + jobs / 100))
            found.append(("DB", "W2", {"part": "W2", "jobs": m, "warmup": DB_WARMUP,
                                       "timeout": 60.0}, 10 + m / 10, 180.0))
        for n in p.w3_once if once else p.w3_sizes:
            found.append(("W3", str(n), {"pending": n, "cycles": p.w3_cycles}, 10 + n / 20_000,
                          90 + n / 5_000))
        for n in p.w4_once if once else p.w4_sizes:
            for shape in p.w4_shapes:
                t = p.w4_chain_timeout.get(n, p.w4_timeout[n]) if shape == "chain" \
                    else p.w4_timeout[n]
                found.append(("W4", f"{shape} {n}", {"shape": shape, "jobs": n, "timeout": t},
                              t + n / 5_000, t + 90 + n / 1_000))
        return found

    small = {("W4", f"{shape} {n}") for shape, n in p.w4_small}
    runs: list[Run] = []
    order = [(1, False), (1, True)] + [(rep, False) for rep in range(2, reps + 1)]
    for rep, once in order:
        shift = (rep - 1) % len(systems)
        rotated = systems[shift:] + systems[:shift]
        for workload, cell, params, soft, hard in cells(rep, once):
            for system in rotated:
                if (workload == "HTTP" or cell in TASKYARD_ONLY) and \
                        not system.startswith("taskyard-"):
                    continue  # the peers have no HTTP API, worker --scheduler, --capacity
                if workload == "DB" and not counted(system):
                    continue
                if system == "airflow-pg" and (
                        rep > 1 or once or (workload, cell) not in small):
                    continue  # Airflow: the small graphs, once (each run takes minutes)
                runs.append(Run(rep, system, workload, cell, params, soft, hard))
    return runs


def execute(run: Run, servers: dict[str, str | None], tmp: Path,
            rtt_ms: float | None = None) -> dict[str, Any]:
    """One run in its own process (its own session: the timeout kills all of it);
    ``rtt_ms``: its PostgreSQL connections through a proxy adding that round trip."""
    tmp.mkdir(parents=True)
    tmp.chmod(0o755)
    spec = {"system": run.system, "workload": run.workload, "params": run.params,
            "tmp": str(tmp), "rtt_ms": rtt_ms, **servers}
    errlog = tmp / "stderr.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *[p for p in sys.path if p]]))
    started = time.monotonic()
    with errlog.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bench.run_one", json.dumps(spec)],
                                stdout=subprocess.PIPE, stderr=err, cwd=HERE, env=env,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=run.hard)
            killed = False
        except subprocess.TimeoutExpired:
            killed = True
        finally:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the run, if any
        if killed:
            out, _ = proc.communicate()
    wall = round(time.monotonic() - started, 2)
    row: dict[str, Any] | None = None
    for line in out.decode(errors="replace").splitlines():
        if line.startswith(MARK):
            row = json.loads(line[len(MARK):])
    if row is None:
        tail = _tail(errlog) or _tail(tmp / "daemons.log")
        row = {"status": "killed" if killed else "failed",
               "error": (f"killed after {run.hard:.0f}s; " if killed else "") + tail}
    row["wall_s"] = wall
    shutil.rmtree(tmp, ignore_errors=True)
    if servers.get("pg"):  # nothing left for autovacuum to do during the next run
        drop_run_databases(str(servers["pg"]))
        if run.workload == "DB":  # a killed run could not turn its statement tracking off
            untrack(str(servers["pg"]))
    return row


def _tail(path: Path, lines: int = 3) -> str:
    if not path.exists():
        return ""
    text = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return " | ".join(ln.strip() for ln in text[-lines:])[-600:]


def adapters(systems: list[str], servers: dict[str, str | None]) -> dict[str, Any]:
    """The systems' adapters in this process: their configuration, and which graphs they
    cannot express (known without starting a run)."""
    from bench.peers import make  # noqa: PLC0415
    from bench.peers.common import Ctx  # noqa: PLC0415

    ctx = Ctx(pg=servers.get("pg"), redis=servers.get("redis"), tmp=Path(tempfile.gettempdir()))
    return {name: make(name, ctx) for name in systems}


def cannot(run: Run, system: Any) -> dict[str, Any] | None:
    if run.workload != "W4":
        return None
    reason = system.cannot(run.params["shape"], run.params["jobs"])
    return {"status": "cannot", "reason": reason} if reason else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="full")
    parser.add_argument("--pg", default=os.environ.get("BENCH_PG"),
                        help="admin URL of a throwaway PostgreSQL cluster")
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS"),
                        help="URL of a throwaway redis-server (its dbs 0-2 are flushed)")
    parser.add_argument("--systems", help="comma-separated (default: the profile's)")
    parser.add_argument("--reps", type=int, help="repetitions (default: the profile's)")
    parser.add_argument("--budget", type=float, help="seconds; later runs are skipped")
    parser.add_argument("--out", default=str(HERE / "bench" / "results"))
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--rtt", type=float, metavar="MS",
                        help="every PostgreSQL connection through a proxy on loopback "
                             "that adds MS of round trip (bench.wire)")
    args = parser.parse_args(argv)

    # SIGTERM (scripts/bench's trap) ends the suite like Ctrl-C: the current run is killed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    profile = PROFILES[args.profile]
    servers: dict[str, str | None] = {"pg": args.pg, "redis": args.redis}
    wanted = args.systems.split(",") if args.systems else list(profile.systems)
    unknown = [s for s in wanted if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems: {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    systems = [s for s in wanted if all(servers.get(n) for n in NEEDS[s])]
    if "airflow-pg" in systems and not airflow_installed():
        systems.remove("airflow-pg")
        print("suite: left out airflow-pg (no venv: make .venv-airflow/.installed)",
              file=sys.stderr)
    left_out = [s for s in wanted if s not in systems]
    if left_out:
        print(f"suite: left out (no server given): {', '.join(left_out)}", file=sys.stderr)
    if not systems:
        parser.error("no system to run")
    reps = args.reps or profile.reps
    budget = args.budget if args.budget is not None else profile.budget
    out = Path(args.out)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    raw_path = out / "raw" / f"{stamp}.json"

    runs = plan(profile, systems, reps)
    facts = host.machine()
    facts["servers"] = host.server_versions(servers)
    doc: dict[str, Any] = {
        "started": stamp, "profile": asdict(profile) | {"reps": reps, "budget": budget},
        "systems": systems, "machine": facts, "rtt_ms": args.rtt, "runs": []}
    found = adapters(systems, servers)
    doc["config"] = {name: {**a.config(), "batch_api": a.batch_api or "none"}
                     for name, a in found.items()}
    tmp_root = Path(tempfile.mkdtemp(prefix="taskyard-bench-"))
    tmp_root.chmod(0o755)
    began = time.monotonic()
    out_of_time = False
    try:
        for i, run in enumerate(runs, 1):
            elapsed = time.monotonic() - began
            not_expressible = cannot(run, found[run.system])
            if not_expressible:
                run.result = dict(not_expressible, wall_s=0.0)
            elif out_of_time or not budget_of.fits(run, runs[:i - 1], elapsed, budget):
                out_of_time = True  # every later run too: the results stay a plan prefix
                run.result = {"status": "skipped", "error": f"suite budget of {budget:.0f}s"}
            else:
                run.result = execute(run, servers, tmp_root / f"{i:04d}", args.rtt)
            print(f"[{time.monotonic() - began:7.1f}s] rep {run.rep} {run.workload} "
                  f"{run.cell:<14} {run.system:<16} {_brief(run.result)}", flush=True)
            doc["runs"].append(asdict(run))
            raw_path.write_text(json.dumps(doc, indent=1))
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    doc["wall_s"] = round(time.monotonic() - began, 1)
    with suppress(OSError):
        facts["load_at_end"] = list(os.getloadavg())
    raw_path.write_text(json.dumps(doc, indent=1))

    from bench import plots as bench_plots  # noqa: PLC0415
    from bench import report  # noqa: PLC0415

    summary = report.summarize(doc)
    (out / "latest.json").write_text(json.dumps(summary, indent=1))
    (out / "latest.md").write_text(report.markdown(summary))
    plots: list[str] = []
    if not args.no_plots:
        plots = bench_plots.plots(summary, doc, out)
    print(f"suite: {len(runs)} runs in {doc['wall_s']:.0f}s -> {out / 'latest.md'}"
          + (f", {', '.join(plots)}" if plots else " (no plots)"), flush=True)
    return 0


def _brief(row: dict[str, Any]) -> str:
    status = row.get("status", "?")
    keys = ("complete_per_s", "complete_per_s_partial", "p50_ms", "cycle_ms_median",
            "end_to_end_s", "jobs_per_s_partial", "enqueue_per_s", "round_trips",
            "latency_round_trips")
    shown = " ".join(f"{k}={row[k]}" for k in keys if k in row)
    shown += "".join(f" {k}_round_trips={row[k]['round_trips']}" for k in ("complete",)
                     if isinstance(row.get(k), dict) and "round_trips" in row[k])
    extra = row.get("error") or row.get("reason") or ""
    return f"{status:<8} {shown} {extra[:160]}".rstrip()


if __name__ == "__main__":
    sys.exit(main())
