"""``taskyard init``, ``scheduler``, ``worker`` and ``up``."""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from types import FrameType

import click

from taskyard.cli.main import State
from taskyard.core.durations import parse_duration
from taskyard.scheduler.cycle import run_cycle
from taskyard.scheduler.daemon import SchedulerDaemon
from taskyard.worker.daemon import DEFAULT_PREFETCH, main_worker

log = logging.getLogger("taskyard.up")


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def handler(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop


def _daemon_logging(ctx: click.Context) -> None:
    # Daemons log their structured lines at INFO unless the user asked for less.
    if ctx.find_root().params.get("verbose", 0) == 0:
        logging.getLogger("taskyard").setLevel(logging.INFO)


@click.command("init")
@click.pass_obj
def init(state: State) -> None:
    """Create or migrate the schema (idempotent)."""
    state.yard.init()
    click.echo(f"taskyard database ready at {state.yard.store.engine.url.render_as_string()}")


STALL = click.option("--stall-after", default=600.0, show_default=True, type=float,
                     help="Flag a running graph without progress for this long (seconds).")
AGING = click.option("--aging", default="10m", show_default=True,
                     help="A pending job gains 1 priority per this much waiting (0: off).")


def _aging(value: str) -> float | None:
    seconds = parse_duration(value, field="--aging")
    return seconds or None


INTERVAL = click.option("--interval", default=1.0, show_default=True, type=float,
                        help="Seconds between periodic cycles (wake-ups also trigger them).")


@click.command("scheduler")
@INTERVAL
@STALL
@click.option("--cancel-stalled", is_flag=True, help="Cancel graphs flagged stalled.")
@click.option("--no-wakeups", is_flag=True, help="Periodic cycles only.")
@click.option("--retain", help="Prune finished work older than this (e.g. 30d), every 10 min.")
@AGING
@click.pass_context
def scheduler(ctx: click.Context, interval: float, stall_after: float, cancel_stalled: bool,
              no_wakeups: bool, retain: str | None, aging: str) -> None:
    """Run the scheduling cycle periodically and on submit/completion."""
    _daemon_logging(ctx)
    stop = _stop_on_signals()
    SchedulerDaemon(ctx.obj.yard.store, interval=interval, wakeups=not no_wakeups,
                    stall_after=stall_after, cancel_stalled=cancel_stalled,
                    retain=None if retain is None else parse_duration(retain, field="--retain"),
                    aging=_aging(aging)).run(stop)


@click.command("worker")
@click.option("--pool", "pools", multiple=True, help="Pools served (repeatable; default: default).")
@click.option("--capacity", type=click.IntRange(min=0), help="Capacity units [default: CPUs].")
@click.option("--name", help="Worker name [default: HOST-PID].")
@click.option("--lease", default=15.0, show_default=True, type=float,
              help="Lease seconds: expelled when not renewed for this long.")
@click.option("--prefetch", type=click.IntRange(min=0), default=DEFAULT_PREFETCH,
              show_default=True,
              help="Most jobs queued here beyond capacity while jobs are short (0: none).")
@click.pass_context
def worker(ctx: click.Context, pools: tuple[str, ...], capacity: int | None, name: str | None,
           lease: float, prefetch: int) -> None:
    """Run a worker: runs the jobs placed on it and their handlers."""
    _daemon_logging(ctx)
    code = main_worker(ctx.obj.url, name=name, pools=pools or ("default",), capacity=capacity,
                       lease_seconds=lease, prefetch=prefetch,
                       placer=lambda store, tx: run_cycle(store, tx, holder="worker",
                                                          maintenance_every=0.25,
                                                          record=False))
    ctx.exit(code)


@click.command("up")
@click.option("--workers", "count", type=click.IntRange(min=0), default=2, show_default=True)
@click.option("--capacity", type=click.IntRange(min=1), help="Per worker [default: CPUs].")
@click.option("--pool", "pools", multiple=True, help="Pools the workers serve (repeatable).")
@click.option("--until-idle", is_flag=True,
              help="Exit once no job is waiting, pending, dispatched, running or suspended.")
@INTERVAL
@STALL
@AGING
@click.pass_context
def up(ctx: click.Context, count: int, capacity: int | None, pools: tuple[str, ...],
       until_idle: bool, interval: float, stall_after: float, aging: str) -> None:
    """Run a scheduler and N local workers until SIGTERM (or until idle)."""
    _daemon_logging(ctx)
    state: State = ctx.obj
    state.yard.init()
    stop = _stop_on_signals()
    host = socket.gethostname().split(".")[0]
    children = []
    for i in range(1, count + 1):
        cmd = [sys.executable, "-m", "taskyard", "--db", state.url, "worker",
               "--name", f"{host}-w{i}"]
        for pool in pools or ("default",):
            cmd += ["--pool", pool]
        if capacity is not None:
            cmd += ["--capacity", str(capacity)]
        children.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL))
    daemon = SchedulerDaemon(state.yard.store, interval=interval, stall_after=stall_after,
                             aging=_aging(aging))
    thread = threading.Thread(target=daemon.run, args=(stop,), daemon=True)
    thread.start()
    try:
        idle_since: float | None = None
        while not stop.wait(0.2):
            if any(c.poll() is not None for c in children):
                log.error("event=worker-exited codes=%s",
                          [c.returncode for c in children])
                break
            if until_idle:
                busy = state.yard.store.unfinished_count()
                idle_since = None if busy else (idle_since or time.monotonic())
                if idle_since is not None and time.monotonic() - idle_since >= 1.0:
                    break
    finally:
        stop.set()
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
        thread.join(10)
    failed = [c.returncode for c in children if c.returncode not in (0, None, -signal.SIGTERM)]
    ctx.exit(1 if failed else 0)


def register(group: click.Group) -> None:
    for command in (init, scheduler, worker, up):
        group.add_command(command)
