"""``taskyard init``, ``scheduler``, ``worker`` and ``up``."""

from __future__ import annotations

import gc
import logging
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import click

from taskyard.api.http import MAX_BODY as MAX_BODY_DEFAULT
from taskyard.cli.budget import MAX_DB, SCHEDULER_MOST, WORKER_MOST, budget
from taskyard.cli.inputs import COUNT, POSITIVE_COUNT
from taskyard.cli.main import DURATION, DurationParam, State
from taskyard.cli.publisher import AMQP, start_publisher
from taskyard.cli.signals import stop_on_signals
from taskyard.core.durations import parse_duration
from taskyard.core.prefetch import DEFAULT_PREFETCH

if TYPE_CHECKING:
    from taskyard.scheduler.daemon import SchedulerDaemon
    from taskyard.store import Store

# The daemons (and the database stack under them) are imported by the commands that run
# them, so that every other command starts without them; what only `up` uses (the HTTP
# server, the worker supervisor, the idle check) too, so that each worker and scheduler
# process holds none of it.

log = logging.getLogger("taskyard.up")
RETENTION = "30d"
"""Default retention of ``taskyard scheduler`` and ``up``: finished jobs and events are
pruned 30 days after they ended (River and Oban prune by default too)."""


def _daemon_logging(ctx: click.Context) -> int:
    """Daemons log their own events (start, stop, failures) at INFO, and each job's
    start and end (``taskyard.jobs``) from -v on. Returns the -v count."""
    verbose = int(ctx.find_root().params.get("verbose", 0) or 0)
    if verbose == 0:
        logging.getLogger("taskyard").setLevel(logging.INFO)
        logging.getLogger("taskyard.jobs").setLevel(logging.WARNING)
    return verbose


def _preflight(state: State) -> None:
    """Fail at start, in one line, when the database cannot be used (unreachable, not
    initialised): once running, a daemon rides out database failures by retrying, and a
    worker would start its handler processes for nothing."""
    state.store.workers.list()


@click.command("init")
@click.pass_obj
def init(state: State) -> None:
    """Create or migrate the schema (idempotent)."""
    state.yard.init()
    click.echo(f"taskyard database ready at {state.yard.store.engine.url.render_as_string()}")


STALL = click.option("--stall-after", default=600.0, show_default=True, type=float,
                     help="Flag a running graph without progress for this long (seconds).")
AGING = click.option("--aging", type=DURATION, default="10m", show_default=True,
                     help="A pending job gains 1 priority per this much waiting (0: off).")

class _Retain(DurationParam):
    """``--retain``: a duration, or ``0`` / ``off`` to keep everything."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, str) and value.strip().lower() == "off":
            return 0.0
        return super().convert(value, param, ctx)


RETAIN = click.option(
    "--retain", type=_Retain(), default=RETENTION, show_default=True,
    help="Prune jobs that finished, and events, longer ago than this, every 10 minutes "
         "(0 or off: keep everything).")

INTERVAL = click.option("--interval", default=1.0, show_default=True, type=float,
                        help="Seconds between periodic cycles (wake-ups also trigger them).")


@click.command("scheduler")
@INTERVAL
@STALL
@click.option("--cancel-stalled", is_flag=True, help="Cancel graphs flagged stalled.")
@click.option("--no-wakeups", is_flag=True, help="Periodic cycles only.")
@RETAIN
@AGING
@MAX_DB
@click.pass_context
def scheduler(ctx: click.Context, interval: float, stall_after: float, cancel_stalled: bool,
              no_wakeups: bool, retain: float, aging: float, max_db: int | None) -> None:
    """Run the scheduling cycle periodically and on submit/completion."""
    from taskyard.scheduler.daemon import SchedulerDaemon  # noqa: PLC0415 - start-up time

    _daemon_logging(ctx)
    ctx.obj.pool = budget(ctx.obj, most=SCHEDULER_MOST, listeners=0 if no_wakeups else 1,
                          max_db=max_db)
    _preflight(ctx.obj)
    stop = stop_on_signals()
    _freeze_start_up()
    SchedulerDaemon(ctx.obj.store, interval=interval, wakeups=not no_wakeups,
                    stall_after=stall_after, cancel_stalled=cancel_stalled,
                    retain=retain or None, aging=aging or None).run(stop)


@click.command("worker")
@click.option("--pool", "pools", multiple=True, help="Pools served (repeatable; default: default).")
@click.option("--capacity", type=COUNT, help="Capacity units [default: CPUs].")
@click.option("--name", help="Worker name [default: HOST-PID].")
@click.option("--lease", default=15.0, show_default=True, type=float,
              help="Lease seconds: expelled when not renewed for this long.")
@click.option("--prefetch", type=COUNT, default=DEFAULT_PREFETCH,
              show_default=True,
              help="Most jobs queued here beyond capacity while jobs are short (0: none).")
@click.option("--scheduler", "with_scheduler", is_flag=True,
              help="Also run a scheduler in this process, with `taskyard scheduler`'s "
                   "defaults: no scheduler process of its own to run.")
@MAX_DB
@click.pass_context
def worker(ctx: click.Context, pools: tuple[str, ...], capacity: int | None, name: str | None,
           lease: float, prefetch: int, with_scheduler: bool, max_db: int | None) -> None:
    """Run a worker: runs the jobs placed on it and their handlers."""
    from taskyard.scheduler.cycle import run_cycle  # noqa: PLC0415 - start-up time
    from taskyard.worker.run import main_worker  # noqa: PLC0415

    _daemon_logging(ctx)
    pool = budget(ctx.obj, most=WORKER_MOST + with_scheduler, listeners=1 + with_scheduler,
                  max_db=max_db)
    _preflight(ctx.obj)
    ctx.obj.close()  # the worker opens its own connections: hold none idle meanwhile
    _freeze_start_up()
    code = main_worker(ctx.obj.url, stop_on_signals(), name=name,
                       pools=pools or ("default",), capacity=capacity, lease_seconds=lease,
                       prefetch=prefetch, connections=ctx.obj.connections(**pool),
                       placer=lambda cycle: run_cycle(cycle, holder="worker",
                                                      maintenance_every=0.25, record=False),
                       companions=[_scheduler_beside] if with_scheduler else [])
    ctx.exit(code)


def _freeze_start_up() -> None:
    """What start-up made (modules, the store's metadata: most of a daemon's objects)
    lives as long as the daemon: kept out of the cyclic collector's full collections,
    which walked it all. A worker draining jobs made one every 10,000 jobs or so, 23-33 ms
    each, a pause in whatever it was doing; frozen, 1.1-1.2 ms. (The CLI's ``main``
    freezes what is left at exit too.)"""
    gc.collect()
    gc.freeze()


def _scheduler_beside(store: Store, stop: threading.Event) -> None:
    """``worker --scheduler``: a scheduler daemon with the defaults of ``taskyard
    scheduler`` on the worker's store, restarted if it dies, until ``stop``."""
    from taskyard.scheduler.daemon import SchedulerDaemon  # noqa: PLC0415 - start-up time

    daemon = SchedulerDaemon(store, retain=parse_duration(RETENTION))
    _SchedulerThread(daemon, stop).run_restarting()


@click.command("up")
@click.option("--workers", "count", type=COUNT, default=2, show_default=True)
@click.option("--capacity", type=POSITIVE_COUNT, help="Per worker [default: CPUs].")
@click.option("--pool", "pools", multiple=True, help="Pools the workers serve (repeatable).")
@click.option("--until-idle", is_flag=True,
              help="Exit once no job can run any more: none dispatched, running or "
                   "suspended, and none pending that is due within --horizon in a pool a "
                   "live worker serves. It logs what it leaves.")
@click.option("--horizon", type=DURATION, default="1m", show_default=True,
              help="With --until-idle: wait for pending jobs due within this long (a "
                   "retry waiting out its delay, a short --run-after).")
@INTERVAL
@STALL
@RETAIN
@AGING
@click.option("--http", "http_port", type=click.IntRange(1, 65535), envvar="TASKYARD_HTTP_PORT",
              help="Also serve the HTTP API and the dashboard on this port.")
@click.option("--http-host", default="127.0.0.1", show_default=True,
              envvar="TASKYARD_HTTP_HOST", help="Address the HTTP API binds (with --http).")
@AMQP
@click.pass_context
def up(ctx: click.Context, count: int, capacity: int | None, pools: tuple[str, ...],
       until_idle: bool, horizon: float, interval: float, stall_after: float, retain: float,
       aging: float, http_port: int | None, http_host: str, amqp_url: str | None) -> None:
    """Run a scheduler and N local workers until SIGTERM (or until idle).

    A worker that exits is restarted (after a growing delay if it keeps dying at once).
    """
    from taskyard.cli.serve import dashboard_url, make_server  # noqa: PLC0415 - start-up time
    from taskyard.cli.supervise import WorkerSupervisor  # noqa: PLC0415
    from taskyard.scheduler.daemon import SchedulerDaemon  # noqa: PLC0415

    verbose = _daemon_logging(ctx)
    state: State = ctx.obj
    state.yard.init()
    http = (None if http_port is None
            else make_server(state, http_host, http_port, MAX_BODY_DEFAULT))
    stop = stop_on_signals()
    host = socket.gethostname().split(".")[0]
    commands = {f"{host}-w{i}": _worker_command(state, f"{host}-w{i}", verbose, pools, capacity)
                for i in range(1, count + 1)}
    supervisor = WorkerSupervisor(dict(commands),
                                  on_exit=lambda name, pid: _release(state, name, pid))
    scheduler = _SchedulerThread(SchedulerDaemon(
        state.yard.store, interval=interval, stall_after=stall_after, retain=retain or None,
        aging=aging or None), stop)
    codes: list[int | None] = []
    publishing: threading.Thread | None = None
    _freeze_start_up()  # the scheduler's thread and the HTTP server live as long as this
    # Its own workers serve these pools even before they have registered.
    idle = _IdleWatch(state, horizon, set(pools or ("default",)) if count else set())
    try:
        supervisor.start()
        scheduler.start()
        if http is not None:
            http.start()
            log.info("event=http-started url=%s", dashboard_url(http_host, http_port or 0))
        publishing = None if amqp_url is None else start_publisher(state, amqp_url, stop)
        while not stop.wait(0.2):
            supervisor.poll()
            scheduler.poll()
            if until_idle and idle.done():
                break
    finally:
        stop.set()
        if http is not None:
            http.stop()
        codes = supervisor.stop()
        scheduler.join(10)
        if publishing is not None:
            publishing.join(10)
    # A worker SIGTERM stopped exits 0 (or by the signal); anything else is worth exit 1.
    failed = [c for c in codes if c not in (0, -signal.SIGTERM)]
    ctx.exit(1 if failed else 0)


def _worker_command(state: State, name: str, verbose: int, pools: tuple[str, ...],
                    capacity: int | None) -> list[str]:
    """The command line of one of ``up``'s workers."""
    cmd = [sys.executable, "-m", "taskyard", "--db", state.url, *["-v"] * verbose]
    if state.listen_url:
        cmd += ["--listen-db", state.listen_url]
    if state.shared_listener:
        cmd.append("--shared-listener")
    cmd += ["worker", "--name", name]
    for pool in pools or ("default",):
        cmd += ["--pool", pool]
    if capacity is not None:
        cmd += ["--capacity", str(capacity)]
    return cmd


def _release(state: State, name: str, pid: int) -> None:
    """Take a dead worker out of the cluster at once.

    Its process has ended (we reaped it), and its guardian ends its handlers as soon as
    it dies, so its jobs need not wait for its lease to run out: they are suspended
    now and requeued by the next cycle, and the restarted worker takes the name back.
    A worker that stopped properly is no longer active: nothing to do then.
    """
    host = socket.gethostname()
    try:
        for worker in state.yard.store.workers.list():
            if worker.pid == pid and worker.hostname == host and worker.name.startswith(name):
                # Expelled, not stopped: it died, and each running job counts the loss
                # (a job that kills its worker must not do so for ever).
                suspended = state.yard.store.workers.expel(worker.id, "worker process exited")
                log.warning("event=worker-released worker=%s suspended=%d", worker.name,
                            suspended)
    except Exception as exc:  # its lease runs out all the same
        log.warning("event=worker-release-failed worker=%s error=%s", name,
                    " ".join(str(exc).split())[:200])


class _IdleWatch:
    """``up --until-idle``: done once :func:`idle_verdict` has said idle for a second
    (checked every half second); logs what it waits for now and then, and at the end
    what it leaves."""

    def __init__(self, state: State, horizon: float, own_pools: set[str]) -> None:
        self.state = state
        self.horizon = horizon
        self.own_pools = own_pools
        self.checked = 0.0
        self.said = 0.0
        self.since: float | None = None

    def done(self) -> bool:
        now = time.monotonic()
        if now - self.checked < 0.5:
            return False
        self.checked = now
        from taskyard.core.idle import idle_verdict  # noqa: PLC0415 - `up --until-idle` only

        try:
            store = self.state.yard.store
            served = self.own_pools | {p for w in store.workers.list() for p in w.pools}
            verdict = idle_verdict(store.jobs.unfinished(self.horizon), served,
                                   store.task_types.paused_pools())
        except Exception as exc:  # a database hiccup must not end `up`: count it as busy
            log.warning("event=idle-check-failed error=%s", " ".join(str(exc).split())[:200])
            self.since = None
            return False
        if not verdict.idle:
            self.since = None
            if now - self.said >= 30:
                self.said = now
                log.info("event=until-idle-waiting for=%r", verdict.waits_for)
            return False
        self.since = self.since or now
        if now - self.since < 1.0:
            return False
        if verdict.left:
            log.warning("event=until-idle-done left=%r", verdict.left)
        else:
            log.info("event=until-idle-done left=nothing")
        return True


class _SchedulerThread:
    """The scheduler daemon in a thread of ``up``, restarted (after a growing delay) if it
    dies, e.g. when its listener cannot reach the database."""

    def __init__(self, daemon: SchedulerDaemon, stop: threading.Event) -> None:
        self.daemon = daemon
        self.stop = stop
        self.thread: threading.Thread | None = None
        self.failures = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        self.restart_at = None
        self.thread = threading.Thread(target=self._run, name="scheduler", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self.daemon.run(self.stop)
        except Exception as exc:
            # Logged as one line here (not by threading's hook as a traceback).
            self.failures = 0 if time.monotonic() - started > 30 else self.failures + 1
            log.error("event=scheduler-failed error=%s: %s", type(exc).__name__,
                      " ".join(str(exc).split())[:300])
            log.debug("scheduler failure", exc_info=True)

    def run_restarting(self) -> None:
        """Run the daemon in this thread until ``stop``, restarting it as :meth:`poll`
        would (``worker --scheduler`` has no supervising loop to poll)."""
        while not self.stop.is_set():
            self._run()
            if not self.stop.is_set():
                self.stop.wait(self._restart_delay())

    def poll(self) -> None:
        if self.stop.is_set():
            return
        if self.restart_at is not None:
            if time.monotonic() >= self.restart_at:
                self.start()
            return
        if self.thread is not None and not self.thread.is_alive():
            self.thread = None
            self.restart_at = time.monotonic() + self._restart_delay()

    def _restart_delay(self) -> float:
        delay = min(2.0 ** max(self.failures - 1, 0), 60.0)
        log.warning("event=scheduler-restart restart_in=%.1fs", delay)
        return delay

    def join(self, timeout: float) -> None:
        if self.thread is not None:
            self.thread.join(timeout)


def register(group: click.Group) -> None:
    for command in (init, scheduler, worker, up):
        group.add_command(command)
