"""The global scheduling lock: never two cycles at once, across processes."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.scheduler.cycle import schedule
from taskyard.store import Store, open_store

PROCESSES = 8


def _contend(url: str, log: str, rounds: int) -> None:
    store = open_store(url)
    for _ in range(rounds):
        with store.cycle() as tx:
            if tx is None:
                continue
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, f"start {time.monotonic_ns()} {os.getpid()}\n".encode())
            time.sleep(0.005)
            os.write(fd, f"end {time.monotonic_ns()} {os.getpid()}\n".encode())
            os.close(fd)
    store.close()


def test_eight_processes_never_hold_the_cycle_at_once(store: Store, tmp_path: Path) -> None:
    log = str(tmp_path / "cycles.log")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_contend, args=(store.url, log, 30)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lines = Path(log).read_text().split()
    events = [lines[i : i + 3] for i in range(0, len(lines), 3)]
    assert events, "no cycle ever ran"
    depth = 0
    for kind, _, _ in events:
        depth += 1 if kind == "start" else -1
        assert depth in (0, 1), "two cycles overlapped"
    assert depth == 0


def test_schedule_returns_none_while_another_holds_the_lock(store: Store) -> None:
    other = open_store(store.url)
    try:
        with store.cycle() as tx:
            assert tx is not None
            assert schedule(other) is None
        assert schedule(other) is not None
    finally:
        other.close()


def test_concurrent_schedulers_never_double_dispatch(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("noop", "shell:true"))
    store.jobs.submit([JobSubmission("noop") for _ in range(200)])
    for i in range(3):
        store.workers.register(f"w{i}", ["default"], 10, lease_seconds=60)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_cycles, args=(store.url,)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    workers = store.workers.list()
    assert sum(w.used for w in workers) == 30
    assert all(w.used == 10 for w in workers)


def _cycles(url: str) -> None:
    store = open_store(url)
    for _ in range(20):
        schedule(store)
    store.close()
