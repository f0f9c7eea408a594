"""The chaos run's verdict: pure checks over what the database recorded, what the
handlers appended to their log, and what the chaos loop did (kills, restarts).

Nothing here touches a database or a process, so each check is exercised on its own
with fabricated violations (tests/chaos/test_chaos.py) as well as on real runs.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Execution:
    """One handler run, from its ``start`` record and (if it got there) its ``end``."""

    job: int
    attempt: int
    worker: str
    wpid: int
    start: float
    end: float | None = None
    ok: bool | None = None
    lock: str | None = None
    type: str = ""
    end_basis: str = "log"  # log | killed | db (where ``end`` came from, see settle_ends)
    orphan: bool = False  # it logged after its worker had died (its parent was not the worker)


@dataclass
class WorkerProc:
    """A worker process the chaos driver started. If the driver SIGKILLed it: when it
    sent the signal (``killed``), reaped the worker (``reaped``) and saw its guardian exit
    (``cleared``): the guardian kills the dead worker's handlers, then exits, so no
    handler of this worker can run after ``cleared``."""

    name: str
    pid: int
    capacity: int
    started: float
    killed: float | None = None
    reaped: float | None = None
    cleared: float | None = None
    exited: float | None = None
    registered: float | None = None  # when the driver saw it join (its log said so)


@dataclass
class JobRow:
    id: int
    type: str
    state: str
    attempt: int
    result: Any
    graph_id: int | None
    label: str | None


@dataclass
class AttemptRow:
    job_id: int
    attempt: int
    state: str
    worker_id: int | None
    worker_name: str | None
    dispatched_at: float | None
    started_at: float | None
    finished_at: float | None


@dataclass
class Expectation:
    """What the driver designed: the final state, and which attempts may fail."""

    state: str
    fail: str | None = None  # None | "first" | "always"


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def add(self, message: str) -> None:
        self.violations.append(message)


def parse_log(path: Path) -> tuple[list[Execution], list[str]]:
    """Executions from the append-only log, and the problems of the log itself
    (a torn line, an end without a start, an attempt started twice)."""
    problems: list[str] = []
    starts: dict[tuple[int, int], Execution] = {}
    ends: dict[tuple[int, int], dict[str, Any]] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
                key = (int(rec["job"]), int(rec["att"]))
            except (ValueError, KeyError, TypeError):
                problems.append(f"log line {number} is not a whole record: {line[:120]!r}")
                continue
            if rec["ev"] == "start":
                if key in starts:
                    problems.append(f"job {key[0]} attempt {key[1]} started twice")
                    continue
                starts[key] = Execution(key[0], key[1], str(rec["w"]), int(rec["wpid"]),
                                        float(rec["t"]), lock=rec.get("lock"),
                                        type=str(rec.get("type", "")),
                                        orphan=rec.get("ppid", rec["wpid"]) != rec["wpid"])
            elif rec["ev"] == "end":
                if key in ends:
                    problems.append(f"job {key[0]} attempt {key[1]} ended twice")
                ends[key] = rec
            else:
                problems.append(f"log line {number}: unknown event {rec['ev']!r}")
    for key, rec in ends.items():
        ex = starts.get(key)
        if ex is None:
            problems.append(f"job {key[0]} attempt {key[1]} ended without a start")
            continue
        if int(rec["wpid"]) != ex.wpid:
            problems.append(f"job {key[0]} attempt {key[1]} started in worker pid {ex.wpid} "
                            f"and ended in {rec['wpid']}")
        ex.end, ex.ok = float(rec["t"]), bool(rec["ok"])
        ex.orphan = ex.orphan or rec.get("ppid", rec["wpid"]) != rec["wpid"]
    return sorted(starts.values(), key=lambda e: e.start), problems


def attribute(executions: Iterable[Execution], procs: Mapping[int, WorkerProc],
              attempts: Mapping[tuple[int, int], AttemptRow], worker_pids: Mapping[int, int],
              verdict: Verdict) -> None:
    """A shell handler started after its worker died names init as its parent: give it
    to the worker the database dispatched it to, if that worker was indeed killed."""
    for ex in executions:
        if ex.wpid in procs:
            continue
        row = attempts.get((ex.job, ex.attempt))
        pid = worker_pids.get(row.worker_id or -1, -1) if row is not None else -1
        proc = procs.get(pid)
        if proc is not None and proc.killed is not None and ex.start >= proc.killed:
            ex.wpid, ex.orphan = pid, True
        else:
            verdict.add(f"job {ex.job} attempt {ex.attempt} ran in pid {ex.wpid}, which is "
                        "not a worker the driver started")


def settle_ends(executions: Iterable[Execution], procs: Mapping[int, WorkerProc],
                attempts: Mapping[tuple[int, int], AttemptRow], verdict: Verdict) -> None:
    """Give every execution an end. One without an ``end`` record was cut short: if its
    worker was SIGKILLed, it died with it, by the time the worker's guardian exited
    (``cleared``); otherwise its worker stopped it (self-fencing, shutdown), which the
    database records as the attempt's end, after the fact. Both are upper bounds, so
    the overlap checks below stay sound. A record timed after ``cleared`` comes from a
    handler that outlived its worker (a record's time is taken before it is written)."""
    latest = 0.0
    for ex in executions:
        proc = procs.get(ex.wpid)
        if proc is not None and proc.cleared is not None:
            last = ex.start if ex.end is None else ex.end
            if proc.reaped is not None:
                latest = max(latest, last - proc.reaped)
            if last > proc.cleared:
                verdict.add(f"job {ex.job} attempt {ex.attempt} outlived its worker "
                            f"{proc.name} (pid {proc.pid}): it logged {last - proc.cleared:.3f}s "
                            "after the worker's guardian exited")
            if ex.end is None:
                ex.end, ex.end_basis = proc.cleared, "killed"
            continue
        if ex.end is not None:
            continue
        row = attempts.get((ex.job, ex.attempt))
        if row is not None and row.finished_at is not None and row.state != "succeeded":
            ex.end, ex.end_basis = row.finished_at, "db"
            continue
        verdict.add(f"job {ex.job} attempt {ex.attempt} on {ex.worker} has no end: not "
                    "logged, its worker was not killed and the database did not end it")
    verdict.figures["latest_log_after_worker_death_s"] = round(latest, 3)


def _max_concurrency(intervals: Sequence[tuple[float, float]]) -> tuple[int, float]:
    """Most intervals open at once, and when. An interval ending exactly when another
    starts does not overlap it."""
    points = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals],
                    key=lambda p: (p[0], p[1]))
    best, at, now = 0, 0.0, 0
    for t, step in points:
        now += step
        if now > best:
            best, at = now, t
    return best, at


def check_capacity(executions: Iterable[Execution], procs: Mapping[int, WorkerProc],
                   verdict: Verdict) -> None:
    """Per worker process, concurrent executions never exceed its capacity."""
    by_proc: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for ex in executions:
        if ex.end is not None:
            by_proc[ex.wpid].append((ex.start, ex.end))
    worst = 0
    for wpid, intervals in by_proc.items():
        proc = procs.get(wpid)
        if proc is None:
            verdict.add(f"executions in pid {wpid}, which is not a worker the driver started")
            continue
        most, at = _max_concurrency(intervals)
        worst = max(worst, most)
        if most > proc.capacity:
            verdict.add(f"worker {proc.name} (pid {wpid}, capacity {proc.capacity}) ran "
                        f"{most} handlers at once at t={at:.3f}")
    verdict.figures["max_concurrent_per_worker"] = worst


def check_locks(executions: Iterable[Execution], verdict: Verdict) -> None:
    """Two holders of one exclusive lock never run at the same time."""
    by_key: dict[str, list[Execution]] = defaultdict(list)
    for ex in executions:
        if ex.lock is not None and ex.end is not None:
            by_key[ex.lock].append(ex)
    held = 0
    for key, holders in sorted(by_key.items()):
        holders.sort(key=lambda e: e.start)
        held += len(holders)
        previous: Execution | None = None
        for ex in holders:
            if previous is not None and previous.end is not None and ex.start < previous.end:
                verdict.add(
                    f"lock {key}: job {ex.job} attempt {ex.attempt} on {ex.worker} started "
                    f"{previous.end - ex.start:.3f}s before job {previous.job} attempt "
                    f"{previous.attempt} on {previous.worker} released it "
                    f"(end from {previous.end_basis})")
            if previous is None or (ex.end or 0) > (previous.end or 0):
                previous = ex
    verdict.figures["lock_holds"] = held


def check_jobs(submitted: Mapping[int, Expectation], jobs: Mapping[int, JobRow],
               attempts: Mapping[int, list[AttemptRow]], completed_events: Mapping[int, int],
               verdict: Verdict) -> None:
    """From the database: nothing lost, every job in its designed final state, and
    exactly one accepted completion per succeeded job — its current attempt's."""
    missing = sorted(set(submitted) - set(jobs))
    extra = sorted(set(jobs) - set(submitted))
    if missing:
        verdict.add(f"{len(missing)} submitted jobs are missing (lost): {missing[:10]}")
    if extra:
        verdict.add(f"{len(extra)} jobs nobody submitted: {extra[:10]}")
    accepted_twice = 0
    for job_id, want in sorted(submitted.items()):
        job = jobs.get(job_id)
        if job is None:
            continue
        if job.state != want.state:
            verdict.add(f"job {job_id} ({job.type} {job.label or ''}) ended {job.state}, "
                        f"expected {want.state}")
        tries = sorted(attempts.get(job_id, []), key=lambda a: a.attempt)
        numbers = [a.attempt for a in tries]
        if numbers != list(range(1, job.attempt + 1)):
            verdict.add(f"job {job_id}: attempts {numbers} for attempt counter {job.attempt}")
        wins = [a for a in tries if a.state == "succeeded"]
        events = completed_events.get(job_id, 0)
        if len(wins) > 1 or events > 1:
            accepted_twice += 1
        for a in tries:
            allowed = {"lost"}
            if (want.fail == "first" and a.attempt == 1) or want.fail == "always":
                allowed.add("failed")
            if a.attempt == job.attempt and job.state == "succeeded":
                allowed = {"succeeded"}
            if a.state not in allowed:
                verdict.add(f"job {job_id} attempt {a.attempt} ended {a.state} on "
                            f"{a.worker_name} (job {job.state}, attempt {job.attempt})")
        if job.state == "succeeded":
            if job.result != {"attempt": job.attempt}:
                verdict.add(f"job {job_id}: result {job.result!r} is not from its current "
                            f"attempt {job.attempt} (a stale completion was accepted)")
            if len(wins) != 1 or wins[0].attempt != job.attempt:
                verdict.add(f"job {job_id}: succeeded attempts {[a.attempt for a in wins]}, "
                            f"current attempt {job.attempt}")
            if events != 1:
                verdict.add(f"job {job_id}: {events} job-completed events")
        elif events:
            verdict.add(f"job {job_id} ended {job.state} with {events} job-completed events")
    verdict.figures["duplicate_completions_accepted"] = accepted_twice


def check_log_against_db(executions: Sequence[Execution], jobs: Mapping[int, JobRow],
                         attempts: Mapping[tuple[int, int], AttemptRow],
                         worker_pids: Mapping[int, int], verdict: Verdict) -> None:
    """Every execution is an attempt the database dispatched to that very worker
    process; every accepted outcome was produced by an execution that got there."""
    ran = {(ex.job, ex.attempt): ex for ex in executions}
    for ex in executions:
        row = attempts.get((ex.job, ex.attempt))
        if row is None:
            verdict.add(f"job {ex.job} attempt {ex.attempt} ran on {ex.worker} but the "
                        "database has no such attempt")
            continue
        if row.worker_name != ex.worker or worker_pids.get(row.worker_id or -1) != ex.wpid:
            verdict.add(f"job {ex.job} attempt {ex.attempt} ran on {ex.worker} (pid "
                        f"{ex.wpid}) but was dispatched to {row.worker_name} (pid "
                        f"{worker_pids.get(row.worker_id or -1)})")
    for (job_id, number), row in attempts.items():
        if row.state not in ("succeeded", "failed"):
            continue
        ex = ran.get((job_id, number))
        if ex is None or ex.end_basis != "log":
            verdict.add(f"job {job_id} attempt {number} recorded {row.state} but no "
                        "execution of it reached its end")
        elif ex.ok != (row.state == "succeeded"):
            verdict.add(f"job {job_id} attempt {number} recorded {row.state}, its handler "
                        f"ended {'ok' if ex.ok else 'in failure'}")
    # A designed failure followed by its retry is not a duplicate: count the executions
    # of a job beyond its first that did not end in a handler failure.
    by_job: dict[int, set[int]] = defaultdict(set)
    counted: Counter[int] = Counter()
    finished_ok: Counter[int] = Counter()
    for ex in executions:
        by_job[ex.job].add(ex.attempt)
        if ex.ok is not False:
            counted[ex.job] += 1
        if ex.ok and ex.end_basis == "log":
            finished_ok[ex.job] += 1
    verdict.figures["executions"] = len(executions)
    verdict.figures["executions_logging_after_worker_death"] = sum(
        1 for ex in executions if ex.orphan)
    verdict.figures["duplicate_executions"] = sum(n - 1 for n in counted.values() if n > 1)
    verdict.figures["jobs_executed_more_than_once"] = sum(1 for n in counted.values() if n > 1)
    verdict.figures["jobs_run_to_success_more_than_once"] = sum(
        1 for n in finished_ok.values() if n > 1)
    verdict.figures["jobs_never_executed"] = sum(
        1 for j in jobs.values() if j.id not in by_job and j.state not in (
            "dependency_failed", "skipped", "canceled"))


def recovery_times(procs: Mapping[int, WorkerProc], attempts: Mapping[tuple[int, int], AttemptRow],
                   worker_pids: Mapping[int, int]) -> list[float]:
    """For each attempt lost with a SIGKILLed worker: the next started attempt's start
    minus the kill time (the job's downtime as the chaos made it)."""
    times: list[float] = []
    for (job_id, number), row in attempts.items():
        if row.state != "lost" or row.worker_id is None:
            continue
        proc = procs.get(worker_pids.get(row.worker_id, -1))
        if proc is None or proc.killed is None:
            continue
        # The next attempt that started: the one right after may have been placed on
        # another worker that died before it could start it.
        later = number + 1
        while (nxt := attempts.get((job_id, later))) is not None and nxt.started_at is None:
            later += 1
        if nxt is not None and nxt.started_at is not None:
            times.append(nxt.started_at - proc.killed)
    return sorted(times)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by nearest rank; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summarize_recovery(times: Sequence[float]) -> dict[str, Any]:
    return {
        "recovered_attempts": len(times),
        "recovery_p50_s": None if not times else round(statistics.median(times), 3),
        "recovery_p99_s": None if not times else round(percentile(times, 0.99) or 0.0, 3),
        "recovery_max_s": None if not times else round(max(times), 3),
    }
