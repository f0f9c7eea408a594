"""Handlers the integration tests run in real worker child processes."""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def echo(**kwargs: Any) -> dict[str, Any]:
    print("hello from", os.environ.get("TASKYARD_JOB_ID"))
    return {"args": kwargs, "job_id": os.environ.get("TASKYARD_JOB_ID"),
            "attempt": os.environ.get("TASKYARD_ATTEMPT"), "pid": os.getpid()}


def boom(message: str = "boom") -> None:
    print("about to fail", file=sys.stderr)
    raise ValueError(message)


def sleepy(seconds: float = 0.1, log: str | None = None) -> float:
    start = time.time()
    if log:
        with open(log, "a") as fh:
            fh.write(f"start {start} {os.environ['TASKYARD_JOB_ID']}\n")
    time.sleep(seconds)
    end = time.time()
    if log:
        with open(log, "a") as fh:
            fh.write(f"end {end} {os.environ['TASKYARD_JOB_ID']}\n")
    return end - start


def not_json() -> object:
    return object()


def die() -> None:
    os._exit(3)


def staged(log: str, marker: str) -> dict[str, Any]:
    """Three stages; the last fails on the first attempt (while ``marker`` is absent), so
    a retry must skip the first two and receive their results."""
    from taskyard import current_job, stage

    def step(name: str, value: Any) -> Any:
        return _logged(log, name, value)

    def load(total: int) -> int:
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("flaky load")
        return step("load", total)

    rows = stage("fetch", step, "fetch", [1, 2, 3])
    total = stage("transform", lambda: step("transform", sum(rows)))
    loaded = stage("load", load, total)
    job = current_job()
    assert job is not None
    return {"rows": rows, "total": total, "loaded": loaded, "attempt": job.attempt}


def pid_then_sleep(path: str, seconds: float) -> None:
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(seconds)


def starts_then_sleeps(path: str, seconds: float) -> None:
    """Start a ``sleep`` of its own (in the child's process group), then write both
    process ids to ``path`` (whole, by a rename) and sleep too."""
    import subprocess

    sleeper = subprocess.Popen(["sleep", str(seconds)])
    with open(path + ".tmp", "w") as fh:
        fh.write(f"{os.getpid()} {sleeper.pid}")
    os.replace(path + ".tmp", path)
    time.sleep(seconds)


async def async_echo(**kwargs: Any) -> dict[str, Any]:
    """An ``async def`` handler: awaits, and says which loop and process ran it."""
    import asyncio

    await asyncio.sleep(0.01)
    print("async hello from", os.environ.get("TASKYARD_JOB_ID"))
    return {"args": kwargs, "loop": id(asyncio.get_running_loop()), "pid": os.getpid()}


async def async_boom(message: str = "boom") -> None:
    import asyncio

    await asyncio.sleep(0)
    raise ValueError(message)


async def async_sleepy(seconds: float = 30.0, started: str | None = None) -> None:
    import asyncio

    if started:
        with open(started, "w") as fh:
            fh.write(str(os.getpid()))
    await asyncio.sleep(seconds)


async def async_leaves_a_task(path: str) -> str:
    """Starts a task that would write ``path`` after 0.3 s and returns at once: the
    child must cancel it, not run it during the next job."""
    import asyncio

    async def late() -> None:
        await asyncio.sleep(0.3)
        with open(path, "w") as fh:
            fh.write("leaked")

    asyncio.get_running_loop().create_task(late())
    return "left"


def sync_runs_its_own_loop() -> int:
    """A plain function that runs asyncio itself, in a child that also runs async jobs."""
    import asyncio

    async def two() -> int:
        await asyncio.sleep(0)
        return 2

    return asyncio.run(two())


async def async_staged(log: str, marker: str) -> dict[str, Any]:
    """:func:`staged` with coroutine stages (and one plain one): a retry skips the
    finished ones."""
    import asyncio

    from taskyard import current_job, stage

    async def step(name: str, value: Any) -> Any:
        await asyncio.sleep(0)
        return _logged(log, name, value)

    async def load(total: int) -> int:
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("flaky load")
        return int(await step("load", total))

    rows = await stage("fetch", step, "fetch", [1, 2, 3])
    total = stage("transform", lambda: _logged(log, "transform", sum(rows)))
    loaded = await stage("load", load, total)
    job = current_job()
    assert job is not None
    return {"rows": rows, "total": total, "loaded": loaded, "attempt": job.attempt}


def _logged(log: str, name: str, value: Any) -> Any:
    with open(log, "a") as fh:
        fh.write(f"{name} {os.environ['TASKYARD_ATTEMPT']}\n")
    return value


def talker(lines: int = 3, every: float = 0.2, then: float = 0.0) -> int:
    """Prints a line every ``every`` seconds (no flush: the worker's child must not hold
    them back), a line to stderr, then sleeps ``then`` seconds."""
    for i in range(lines):
        print(f"line {i}")
        time.sleep(every)
    print("to stderr", file=sys.stderr)
    time.sleep(then)
    return lines


def spin_on(cpu: int, seconds: float) -> float:
    """Run on CPU ``cpu`` only until this thread has used ``seconds`` of CPU time;
    return the wall time that took."""
    os.sched_setaffinity(0, {cpu})
    started = time.perf_counter()
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass
    return time.perf_counter() - started
