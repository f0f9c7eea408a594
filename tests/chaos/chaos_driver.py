"""Chaos run: real daemons SIGKILLed and restarted while ≥ 2,000 jobs and graphs run.

    python -m tests.chaos.chaos_driver --db sqlite:///chaos.db [--seed N] [--pg-dir DIR]

Starts a scheduler and three workers with the real CLI (``python -m taskyard``) on a
fresh database, submits the workload over a window of time (holding back while the
backlog is long), and meanwhile SIGKILLs a random worker every 1-3 s (restarting it at
once; for at most two windows), SIGKILLs the scheduler a few times (restarting it after
a pause), restarts any daemon that exits by itself, and with
``--pg-dir`` (the directory of a throwaway ``scripts/pg-cluster``) restarts the
PostgreSQL server once mid-run. Then it waits for every job to end, stops the daemons
and judges the run from the database and from the log the handlers append to (see
:mod:`chaos_checks`). It prints a JSON summary of figures and the violations; the exit
code is 1 if there is any violation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.engine import make_url

from taskyard.api.yard import Yard
from taskyard.core.locks import decode_claim
from taskyard.core.prefetch import DEFAULT_PREFETCH
from taskyard.core.states import ACTIVE
from taskyard.model.records import loads
from taskyard.store import schema as t
from taskyard.worker.guardian import NAME

try:  # python -m tests.chaos.chaos_driver
    from . import chaos_checks as checks
    from .chaos_handlers import LOG_ENV, SHELL_HANDLER
except ImportError:  # imported by pytest, which puts this folder on sys.path
    import chaos_checks as checks  # type: ignore[no-redef]
    from chaos_handlers import LOG_ENV, SHELL_HANDLER  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PG_CLUSTER = REPO / "scripts" / "pg-cluster"
LOCK_SLOTS = 5
WORK = "python:chaos_handlers:work"
# Jobs lose their worker often here, by design: the loss budget must not end them.
LOSSES = 1000


@dataclass
class Config:
    db: str
    jobs: int = 2000
    seed: int = field(default_factory=lambda: random.SystemRandom().randrange(1 << 32))
    workers: int = 3
    capacity: int = 4
    lease: float = 2.0
    window: float = 70.0
    """Seconds over which the workload is submitted; the chaos lasts as long."""
    backlog: int = 200
    """Most unfinished jobs before submissions hold back."""
    chaos_stretch: float = 2.0
    """The kills stop after this many windows even if submissions go on (held back on a
    loaded machine): each restart costs a CPU-second the jobs need to catch up."""
    max_stretch: float = 6.0
    """Submissions must be done within this many windows (a liveness bound)."""
    kill_every: tuple[float, float] = (1.0, 3.0)
    scheduler_kills: int = 3
    pg_dir: Path | None = None
    drain_timeout: float = 120.0
    run_dir: Path | None = None


# --------------------------------------------------------------------------- workload


@dataclass
class Item:
    at: float
    type: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    expect: checks.Expectation | None = None
    graph: dict[str, Any] | None = None
    graph_expect: dict[str, checks.Expectation] = field(default_factory=dict)
    graph_state: str = "finished"


def _task(rng: random.Random, key: str, *, allow_failure: bool = True
          ) -> tuple[str, dict[str, Any], checks.Expectation]:
    """One job's type, args and designed outcome."""
    r = rng.random()
    ok = checks.Expectation("succeeded")
    if r < 0.55:
        ms = rng.uniform(2, 30) if rng.random() < 0.7 else rng.uniform(30, 200)
        return "quick", {"ms": round(ms, 1), "kind": "quick", "k": key}, ok
    if r < 0.70:
        return "sh", {"seconds": round(rng.uniform(0.01, 0.12), 3), "k": key}, ok
    if r < 0.85:
        return "locked", {"ms": round(rng.uniform(10, 60), 1), "kind": "locked",
                          "slot": rng.randrange(LOCK_SLOTS), "k": key}, ok
    if r < 0.99 or not allow_failure:
        return "flaky", {"ms": round(rng.uniform(5, 50), 1), "kind": "flaky", "fail": "first",
                         "k": key}, checks.Expectation("succeeded", "first")
    return "doomed", {"ms": 5, "kind": "doomed", "fail": "always", "k": key}, \
        checks.Expectation("failed", "always")


def _graph(rng: random.Random, index: int, shape: str, doomed: bool) -> Item:
    """A diamond, chain, fan-in or wide diamond; ``doomed``: one inner task fails for
    good, so its descendants end dependency_failed and the graph blocked."""
    edges: dict[str, list[str]] = {}
    if shape == "diamond":
        edges = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    elif shape == "chain":
        edges = {f"t{i}": [f"t{i - 1}"] if i else [] for i in range(10)}
    elif shape == "fanin":
        edges = {f"s{i}": [] for i in range(12)}
        edges["join"] = list(edges)
        edges["after"] = ["join"]
    else:  # wide
        edges = {"root": [], **{f"m{i}": ["root"] for i in range(14)}}
        edges["sink"] = [f"m{i}" for i in range(14)]
    labels = list(edges)
    victim = rng.choice([lab for lab in labels if edges[lab] and lab != labels[-1]]) \
        if doomed else None
    tasks: dict[str, Any] = {}
    expect: dict[str, checks.Expectation] = {}
    for label in labels:
        key = f"g{index}.{label}"
        if label == victim:
            type_, args, want = "doomed", {"ms": 5, "kind": "doomed", "fail": "always",
                                           "k": key}, checks.Expectation("failed", "always")
        else:
            type_, args, want = _task(rng, key, allow_failure=False)
        body: dict[str, Any] = {"type": type_, "args": args}
        if edges[label]:
            body["requires"] = edges[label]
        if type_ == "flaky":
            body["reruns"] = 2
        elif type_ == "doomed":
            body["reruns"] = 1
        tasks[label] = body
        expect[label] = want
    if victim is not None:
        doomed_set = {victim}
        for label in labels:  # labels are in topological order
            if any(p in doomed_set for p in edges[label]):
                doomed_set.add(label)
                expect[label] = checks.Expectation("dependency_failed")
    return Item(at=0.0, graph={"routing": f"c{index}", "tasks": tasks}, graph_expect=expect,
                graph_state="blocked" if doomed else "finished")


def plan_workload(cfg: Config, rng: random.Random) -> list[Item]:
    items: list[Item] = []
    for n in range(cfg.jobs):
        type_, args, want = _task(rng, f"j{n}")
        items.append(Item(at=rng.uniform(0, cfg.window), type=type_, args=args, expect=want))
    shapes = ["diamond"] * 10 + ["chain"] * 8 + ["fanin"] * 6 + ["wide"] * 6
    for index, shape in enumerate(shapes):
        item = _graph(rng, index, shape, doomed=index in (3, 14, 25))
        item.at = rng.uniform(0, cfg.window * 0.9)
        items.append(item)
    items.sort(key=lambda i: i.at)
    return items


def register_types(yard: Yard) -> None:
    yard.add_task_type("quick", WORK, max_worker_losses=LOSSES)
    yard.add_task_type("sh", SHELL_HANDLER, max_worker_losses=LOSSES)
    yard.add_task_type("locked", WORK, locks=("res:{slot}",), max_worker_losses=LOSSES)
    yard.add_task_type("flaky", WORK, retries=2, retry_delay=0.2, max_worker_losses=LOSSES)
    yard.add_task_type("doomed", WORK, retries=1, retry_delay=0.1, max_worker_losses=LOSSES)


# --------------------------------------------------------------------------- daemons


class Daemons:
    """The scheduler and workers as real CLI processes, killed and restarted at will."""

    def __init__(self, cfg: Config, run_dir: Path, env: dict[str, str]) -> None:
        self.cfg = cfg
        self.run_dir = run_dir
        self.env = env
        self.procs: dict[str, subprocess.Popen[bytes] | None] = {}
        self.workers: dict[int, checks.WorkerProc] = {}
        self.counts: Counter[str] = Counter()
        self.exits: list[str] = []
        self.logs: dict[str, Path] = {}
        self._n = 0
        (run_dir / "logs").mkdir(exist_ok=True)

    def roles(self) -> list[str]:
        return ["scheduler", *(f"w{i}" for i in range(1, self.cfg.workers + 1))]

    def start(self, role: str) -> None:
        base = [sys.executable, "-m", "taskyard", "--db", self.cfg.db]
        if role == "scheduler":
            cmd = [*base, "scheduler", "--interval", "0.5"]
        else:
            cmd = [*base, "worker", "--name", role, "--capacity", str(self.cfg.capacity),
                   "--lease", str(self.cfg.lease)]
        self._n += 1
        self.logs[role] = self.run_dir / "logs" / f"{role}-{self._n}.log"
        with self.logs[role].open("wb") as log:
            proc = subprocess.Popen(cmd, env=self.env, cwd=self.run_dir,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=log)
        self.procs[role] = proc
        if role != "scheduler":
            self.workers[proc.pid] = checks.WorkerProc(role, proc.pid, self.cfg.capacity,
                                                       time.time())

    def serving(self) -> list[str]:
        """The workers that have joined the cluster (registered), as their logs say."""
        roles = []
        for role, proc in self.procs.items():
            if role == "scheduler" or proc is None or proc.poll() is not None:
                continue
            record = self.workers[proc.pid]
            if record.registered is None and b"event=worker-started" in \
                    self.logs[role].read_bytes():
                record.registered = time.time()
            if record.registered is not None:
                roles.append(role)
        return roles

    def kill(self, role: str) -> None:
        proc = self.procs.get(role)
        if proc is None or proc.poll() is not None:
            return
        guardian = _guardian_of(proc.pid)
        killed = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reaped = time.time()
        self.procs[role] = None
        self.counts["scheduler_kills" if role == "scheduler" else "worker_kills"] += 1
        if role == "scheduler":
            return
        record = self.workers[proc.pid]
        record.killed, record.reaped = killed, reaped
        # The guardian kills the worker's handlers, then exits: once it is gone, none of
        # them may run any more (a later log record is a handler that escaped it).
        deadline = time.monotonic() + 5
        while guardian is not None and _running(guardian):
            if time.monotonic() > deadline:
                self.exits.append(f"the guardian {guardian} of worker pid {proc.pid} did "
                                  "not exit")
                break
            time.sleep(0.001)
        record.cleared = time.time()

    def supervise(self) -> None:
        """Restart a daemon that exited by itself (e.g. a worker that fenced itself off
        when the database went away, or one that could not register meanwhile)."""
        for role, proc in self.procs.items():
            if proc is None or proc.poll() is None:
                continue
            self.counts["daemon_exits"] += 1
            self.exits.append(f"{role} pid {proc.pid} exited with {proc.returncode}")
            if proc.pid in self.workers:
                self.workers[proc.pid].exited = time.time()
            self.start(role)

    def stop_all(self) -> None:
        procs = [p for p in self.procs.values() if p is not None and p.poll() is None]
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                self.exits.append(f"pid {proc.pid} ignored SIGTERM for 30 s")


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _guardian_of(pid: int) -> int | None:
    """The worker's guardian process (see taskyard.worker.guardian), if it has one yet."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid and (entry / "cmdline").read_bytes().endswith(NAME.encode() + b"\0"):
                return int(entry.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def restart_server(pg_dir: Path) -> None:
    subprocess.run([str(PG_CLUSTER), "restart", str(pg_dir)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)


class Chaos(threading.Thread):
    """Kills a random worker every 1-3 s (one that has joined, not the last one serving),
    the scheduler a few times, the server once."""

    def __init__(self, cfg: Config, daemons: Daemons, rng: random.Random) -> None:
        super().__init__(name="chaos", daemon=True)
        self.cfg, self.daemons, self.rng = cfg, daemons, rng
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.server_restarts: list[tuple[float, float]] = []

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the driver, which then fails the run
            self.error = exc

    def _run(self) -> None:
        cfg, rng, d = self.cfg, self.rng, self.daemons
        t0 = time.monotonic()
        next_kill = t0 + rng.uniform(*cfg.kill_every)
        scheduler_kills = sorted(t0 + cfg.window * (k + 0.5) / (cfg.scheduler_kills + 0.5)
                                 + rng.uniform(-2, 2) for k in range(cfg.scheduler_kills))
        scheduler_back: float | None = None
        server_at = t0 + cfg.window * rng.uniform(0.35, 0.55) if cfg.pg_dir else None
        while not self.stop.wait(0.05):
            d.supervise()
            now = time.monotonic()
            if now - t0 > cfg.window * cfg.chaos_stretch:
                break
            # The victim is a worker that has joined, and never the last one serving: on
            # a loaded machine a worker can take longer to start than the time between
            # kills, and the run would then measure nothing but start-ups (the kill
            # waits until two serve).
            serving = d.serving() if now >= next_kill else []
            if len(serving) >= 2:
                victim = rng.choice(serving)
                d.kill(victim)
                d.start(victim)
                next_kill = time.monotonic() + rng.uniform(*cfg.kill_every)
            if scheduler_kills and now >= scheduler_kills[0]:
                scheduler_kills.pop(0)
                d.kill("scheduler")
                scheduler_back = now + rng.uniform(0.3, 2.0)
            if scheduler_back is not None and now >= scheduler_back:
                d.start("scheduler")
                scheduler_back = None
            if server_at is not None and now >= server_at and cfg.pg_dir is not None:
                began = time.time()
                restart_server(cfg.pg_dir)
                self.server_restarts.append((began, time.time()))
                server_at = None
        if scheduler_back is not None:
            d.start("scheduler")
        if self.stop.is_set():
            return
        # Kills over: keep restarting daemons that exit until the driver says stop.
        while not self.stop.wait(0.2):
            d.supervise()


class Monitor(threading.Thread):
    """Samples the database's own view while the run goes on: no worker runs more jobs
    than its capacity, nor holds more dispatched and running jobs than its capacity
    plus the widest prefetch window, and no exclusive lock has two holders."""

    def __init__(self, yard: Yard) -> None:
        super().__init__(name="monitor", daemon=True)
        self.yard = yard
        self.stop = threading.Event()
        self.samples = 0
        self.errors = 0
        self.violations: list[str] = []

    def run(self) -> None:
        store, j, w = self.yard.store, t.jobs, t.workers
        running = func.sum(case((j.c.state == "running", 1), else_=0))
        load = (select(j.c.worker_id, w.c.name, w.c.capacity, func.count().label("n"),
                       running.label("running"))
                .join(w, w.c.id == j.c.worker_id).where(j.c.state.in_(sorted(ACTIVE)))
                .group_by(j.c.worker_id, w.c.name, w.c.capacity))
        held = select(j.c.id, j.c.locks).where(j.c.state.in_(sorted(ACTIVE)),
                                                j.c.locks != "[]")
        while not self.stop.wait(0.2):
            try:
                with store.read() as tx:
                    conn = tx.conn
                    rows = conn.execute(load).all()
                    holders: dict[str, list[int]] = defaultdict(list)
                    for job_id, locks in conn.execute(held):
                        for claim in map(decode_claim, loads(locks)):
                            if claim.exclusive:
                                holders[claim.key].append(job_id)
            except Exception:  # the server restarts under us: skip this sample
                self.errors += 1
                continue
            self.samples += 1
            for _wid, name, capacity, n, run in rows:
                if run > capacity:
                    self.violations.append(f"database: worker {name} runs {run} jobs, "
                                           f"capacity {capacity}")
                if n > capacity + DEFAULT_PREFETCH:
                    self.violations.append(f"database: worker {name} holds {n} active jobs, "
                                           f"capacity {capacity} + prefetch {DEFAULT_PREFETCH}")
            for key, ids in holders.items():
                if len(ids) > 1:
                    self.violations.append(f"database: lock {key} held by jobs {ids}")


# --------------------------------------------------------------------------- submission


class Submitter:
    """Submits items when due. A call that fails may still have committed (the server
    went away before its answer arrived): it looks for the rows before trying again, so
    nothing is submitted twice and every submitted job is known."""

    def __init__(self, yard: Yard) -> None:
        self.yard = yard
        self.job_ids: dict[str, int] = {}  # key → id (standalone jobs)
        self.graph_ids: dict[str, int] = {}  # routing → graph id
        self.retried = 0
        self._max_job = 0
        self._max_graph = 0

    def _landed_jobs(self, keys: list[str]) -> list[int] | None:
        j = t.jobs
        with self.yard.store.read() as tx:
            conn = tx.conn
            rows = conn.execute(select(j.c.id, j.c.args).where(j.c.id > self._max_job)).all()
        found = {loads(args).get("k"): int(i) for i, args in rows}
        ids = [found[k] for k in keys if k in found]
        if ids and len(ids) != len(keys):
            raise AssertionError(f"a batch landed in part: {len(ids)} of {len(keys)}")
        return ids or None

    def _landed_graph(self, routing: str) -> int | None:
        g = t.graphs
        with self.yard.store.read() as tx:
            conn = tx.conn
            return conn.execute(select(g.c.id).where(g.c.id > self._max_graph,
                                                     g.c.routing == routing)).scalar()

    def _until_done(self, call: Callable[[], Any], landed: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + 120
        while True:
            try:
                return call()
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise
                self.retried += 1
                print(f"chaos: submission failed ({type(exc).__name__}); checking",
                      file=sys.stderr)
            while True:  # wait for the database, then see whether the call committed
                time.sleep(0.2)
                try:
                    found = landed()
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
            if found is not None:
                return found

    def submit_jobs(self, type_: str, items: list[Item]) -> None:
        keys = [i.args["k"] for i in items]
        ids = self._until_done(lambda: self.yard.submit_many(type_, [i.args for i in items]),
                               lambda: self._landed_jobs(keys))
        self.job_ids.update(zip(keys, ids, strict=True))
        self._max_job = max(self._max_job, *ids)

    def submit_graph(self, item: Item) -> None:
        assert item.graph is not None
        routing = item.graph["routing"]
        gid = self._until_done(lambda: self.yard.submit_graph(item.graph or {}),
                               lambda: self._landed_graph(routing))
        self.graph_ids[routing] = int(gid)
        self._max_graph = max(self._max_graph, int(gid))

    def _backlog(self) -> int | None:
        try:
            return self.yard.store.jobs.unfinished_count()
        except Exception:  # the server is restarting
            return None

    def run(self, items: list[Item], t0: float, backlog: int, deadline: float) -> bool:
        """Submit each item when due, holding back while more than ``backlog`` jobs are
        unfinished (the run then lasts longer instead of ending with a long queue: this
        machine's speed varies a lot). False if ``deadline`` (monotonic) came first."""
        pending = list(items)
        while pending:
            if time.monotonic() > deadline:
                return False
            now = time.monotonic() - t0
            unfinished = self._backlog()
            room = 0 if unfinished is None else backlog - unfinished
            due: list[Item] = []
            while pending and pending[0].at <= now and room > 0:
                item = pending.pop(0)
                due.append(item)
                room -= len(item.graph_expect) if item.graph is not None else 1
            by_type: dict[str, list[Item]] = defaultdict(list)
            for item in due:
                if item.graph is not None:
                    self.submit_graph(item)
                else:
                    by_type[item.type].append(item)
            for type_, batch in by_type.items():
                self.submit_jobs(type_, batch)
            if pending:
                time.sleep(max(0.02, min(0.25, pending[0].at - (time.monotonic() - t0))))
        return True


# --------------------------------------------------------------------------- the run


@dataclass
class Snapshot:
    """What the database recorded, read once everything has stopped."""

    jobs: dict[int, checks.JobRow]
    attempts: dict[tuple[int, int], checks.AttemptRow]
    completed: dict[int, int]  # job id → job-completed events
    worker_pids: dict[int, int]  # worker id → pid
    graphs: dict[int, str]  # graph id → state

    @classmethod
    def read(cls, yard: Yard) -> Snapshot:
        j, a, e, w, g = t.jobs, t.attempts, t.events, t.workers, t.graphs
        with yard.store.read() as tx:
            conn = tx.conn
            jobs = {
                r.id: checks.JobRow(r.id, r.type, r.state, r.attempt, loads(r.result),
                                    r.graph_id, r.label)
                for r in conn.execute(select(j.c.id, j.c.type, j.c.state, j.c.attempt,
                                             j.c.result, j.c.graph_id, j.c.label))
            }
            attempts = {
                (r.job_id, r.attempt): checks.AttemptRow(
                    r.job_id, r.attempt, r.state, r.worker_id, r.worker_name, r.dispatched_at,
                    r.started_at, r.finished_at)
                for r in conn.execute(select(a))
            }
            completed = {
                int(job_id): int(n)
                for job_id, n in conn.execute(select(e.c.job_id, func.count()).where(
                    e.c.topic == "job-completed").group_by(e.c.job_id))
            }
            pids = {int(i): int(p) for i, p in conn.execute(select(w.c.id, w.c.pid))}
            graphs = {int(i): str(st) for i, st in conn.execute(select(g.c.id, g.c.state))}
        return cls(jobs, attempts, completed, pids, graphs)


def _count_in_logs(run_dir: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in (run_dir / "logs").glob("*.log"):
        text = path.read_text(errors="replace")
        for word in ("event=completion-refused", "event=self-fenced", "event=expelled",
                     "event=abandoned", "event=name-taken", "event=complete-failed",
                     "event=outcomes-dropped", "event=heartbeat-failed", "event=cycle-failed",
                     "Traceback"):
            counts[word.removeprefix("event=")] += text.count(word)
    return counts


class ChaosRun:
    def __init__(self, cfg: Config, run_dir: Path) -> None:
        self.cfg = cfg
        self.run_dir = run_dir
        self.rng = random.Random(cfg.seed)
        self.store_name = make_url(cfg.db).get_backend_name()
        self.log_path = run_dir / "executions.log"
        self.yard = Yard(cfg.db)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]),
                   **{LOG_ENV: str(self.log_path)})
        self.daemons = Daemons(cfg, run_dir, env)
        self.chaos = Chaos(cfg, self.daemons, self.rng)
        self.monitor = Monitor(self.yard)
        self.submitter = Submitter(self.yard)
        self.items: list[Item] = []
        self.problems: list[str] = []
        self.unfinished = 0
        self.times: dict[str, float] = {}

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        cfg = self.cfg
        print(f"chaos: store={self.store_name} seed={cfg.seed} run_dir={self.run_dir}",
              file=sys.stderr)
        self.log_path.touch()
        if str(HERE) not in sys.path:
            sys.path.insert(0, str(HERE))  # add_task_type checks that the handlers import
        try:
            self.yard.init()
            if self.yard.jobs(limit=1):
                raise SystemExit("chaos: the database must be fresh (it already holds jobs)")
            register_types(self.yard)
            self.items = plan_workload(cfg, self.rng)
            for role in self.daemons.roles():
                self.daemons.start(role)
            self._chaos_phase()
            self._drain_phase()
            self.times["wall_s"] = time.monotonic() - started
            return self.judge()
        finally:
            self.daemons.stop_all()
            self.yard.close()

    def _chaos_phase(self) -> None:
        cfg = self.cfg
        self.monitor.start()
        self.chaos.start()
        t0 = time.monotonic()
        try:
            if not self.submitter.run(self.items, t0, cfg.backlog,
                                      t0 + cfg.window * cfg.max_stretch):
                self.problems.append(
                    f"the backlog stayed above {cfg.backlog} jobs: only part of the workload "
                    f"was submitted in {cfg.window * cfg.max_stretch:.0f}s")
            # Chaos for the whole window, even when submissions finished early.
            while time.monotonic() - t0 < cfg.window and self.chaos.is_alive():
                time.sleep(0.1)
        finally:
            self.chaos.stop.set()
            self.chaos.join(180)
        self.times["chaos_s"] = min(time.monotonic() - t0, cfg.window * cfg.chaos_stretch)
        self.times["submit_s"] = time.monotonic() - t0

    def _drain_phase(self) -> None:
        """No more kills: wait for every job to end (still restarting daemons that exit),
        then stop the daemons with SIGTERM."""
        began = time.monotonic()
        done = threading.Event()

        def supervise() -> None:
            while not done.wait(0.2):
                self.daemons.supervise()

        watcher = threading.Thread(target=supervise, daemon=True)
        watcher.start()
        deadline = began + self.cfg.drain_timeout
        self.unfinished = -1
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                self.unfinished = self.yard.store.jobs.unfinished_count()
            if self.unfinished == 0:
                break
            time.sleep(0.25)
        self.times["drain_s"] = time.monotonic() - began
        done.set()
        watcher.join(10)
        self.monitor.stop.set()
        self.monitor.join(10)
        self.daemons.stop_all()

    def _expectations(self, db: Snapshot, verdict: checks.Verdict) -> dict[int, checks.Expectation]:
        """Submitted job id → its designed outcome; graphs checked on the way."""
        submitted: dict[int, checks.Expectation] = {}
        for item in self.items:
            if item.graph is None:
                key = item.args["k"]
                if key not in self.submitter.job_ids:
                    verdict.add(f"job {key} was never submitted")
                elif item.expect is not None:
                    submitted[self.submitter.job_ids[key]] = item.expect
                continue
            routing = item.graph["routing"]
            gid = self.submitter.graph_ids.get(routing)
            if gid is None:
                verdict.add(f"graph {routing} was never submitted")
                continue
            labels = {job.label: job.id for job in db.jobs.values() if job.graph_id == gid}
            if set(labels) != set(item.graph_expect):
                verdict.add(f"graph {gid} has tasks {sorted(map(str, labels))}, submitted "
                            f"{sorted(item.graph_expect)}")
            for label, want in item.graph_expect.items():
                if label in labels:
                    submitted[labels[label]] = want
            if db.graphs.get(gid) != item.graph_state:
                verdict.add(f"graph {gid} ended {db.graphs.get(gid)}, expected "
                            f"{item.graph_state}")
        return submitted

    def judge(self) -> dict[str, Any]:
        cfg, daemons, chaos = self.cfg, self.daemons, self.chaos
        verdict = checks.Verdict()
        if chaos.error is not None:
            verdict.add(f"the chaos loop failed: {chaos.error!r}")
        if self.unfinished:
            verdict.add(f"{self.unfinished} jobs still unfinished {cfg.drain_timeout:.0f}s "
                        "after the chaos stopped")
        verdict.violations.extend(self.problems + self.monitor.violations)
        db = Snapshot.read(self.yard)
        submitted = self._expectations(db, verdict)
        by_job: dict[int, list[checks.AttemptRow]] = defaultdict(list)
        for row in db.attempts.values():
            by_job[row.job_id].append(row)
        checks.check_jobs(submitted, db.jobs, by_job, db.completed, verdict)

        executions, problems = checks.parse_log(self.log_path)
        verdict.violations.extend(problems)
        checks.attribute(executions, daemons.workers, db.attempts, db.worker_pids, verdict)
        checks.settle_ends(executions, daemons.workers, db.attempts, verdict)
        checks.check_log_against_db(executions, db.jobs, db.attempts, db.worker_pids, verdict)
        checks.check_capacity(executions, daemons.workers, verdict)
        checks.check_locks(executions, verdict)
        recovery = checks.recovery_times(daemons.workers, db.attempts, db.worker_pids)

        (self.run_dir / "workers.json").write_text(json.dumps(
            [vars(w) for w in daemons.workers.values()], indent=1))
        logs = _count_in_logs(self.run_dir)
        graph_jobs = sum(1 for i in submitted if i in db.jobs and db.jobs[i].graph_id)
        return {
            "store": self.store_name,
            "seed": cfg.seed,
            "jobs": len(submitted),
            "graphs": len(self.submitter.graph_ids),
            "graph_jobs": graph_jobs,
            "final_states": dict(sorted(Counter(j.state for j in db.jobs.values()).items())),
            "workers": cfg.workers,
            "capacity": cfg.capacity,
            "lease_s": cfg.lease,
            "worker_kills": daemons.counts["worker_kills"],
            "scheduler_kills": daemons.counts["scheduler_kills"],
            "server_restarts": len(chaos.server_restarts),
            "server_restart_s": [round(b - a, 2) for a, b in chaos.server_restarts],
            "daemon_exits_restarted": daemons.counts["daemon_exits"],
            "submissions_retried": self.submitter.retried,
            "attempts": len(db.attempts),
            "lost_attempts": sum(1 for a in db.attempts.values() if a.state == "lost"),
            "stale_completions_refused": logs["completion-refused"],
            "attempts_abandoned_by_fenced_workers": logs["abandoned"],
            "self_fenced": logs["self-fenced"],
            "db_samples": self.monitor.samples,
            "worker_startup_p50_s": round(checks.percentile(
                [w.registered - w.started for w in daemons.workers.values()
                 if w.registered is not None], 0.5) or 0.0, 2),
            "guardian_clear_max_s": max((round(w.cleared - w.killed, 3)
                                         for w in daemons.workers.values()
                                         if w.cleared is not None and w.killed is not None),
                                        default=None),
            **verdict.figures,
            **checks.summarize_recovery(recovery),
            **{k: round(v, 1) for k, v in self.times.items()},
            "daemon_exits": daemons.exits[:20],
            "log_counts": dict(logs),
            "violation_count": len(verdict.violations),
            "violations": verdict.violations[:200],
        }


@contextlib.contextmanager
def _run_dir(cfg: Config) -> Iterator[Path]:
    if cfg.run_dir is not None:
        cfg.run_dir.mkdir(parents=True, exist_ok=True)
        yield cfg.run_dir
        return
    with tempfile.TemporaryDirectory(prefix="taskyard-chaos-") as tmp:
        yield Path(tmp)


def run(cfg: Config) -> dict[str, Any]:
    """One chaos run; returns the summary (``violations`` lists what went wrong)."""
    with _run_dir(cfg) as run_dir:
        return ChaosRun(cfg, run_dir).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="URL of a fresh database")
    parser.add_argument("--jobs", type=int, default=2000, help="standalone jobs (plus graphs)")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--window", type=float, default=70.0,
                        help="seconds of submissions and chaos")
    parser.add_argument("--capacity", type=int, default=4)
    parser.add_argument("--pg-dir", type=Path,
                        help="scripts/pg-cluster directory of the server, to restart it")
    parser.add_argument("--run-dir", type=Path, help="keep logs here (default: a temp dir)")
    parser.add_argument("--report", type=Path, help="also write the summary JSON here")
    ns = parser.parse_args(argv)
    cfg = Config(db=ns.db, jobs=ns.jobs, window=ns.window, capacity=ns.capacity,
                 pg_dir=ns.pg_dir, run_dir=ns.run_dir)
    if ns.seed is not None:
        cfg.seed = ns.seed
    summary = run(cfg)
    text = json.dumps(summary, indent=2)
    print(text)
    if ns.report is not None:
        ns.report.write_text(text + "\n")
    return 1 if summary["violation_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
