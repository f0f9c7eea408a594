"""Losing the database primary: a primary with a synchronous streaming standby, the
daemons on a URL naming both (``target_session_attrs=read-write``), a stream of submits
and completions, the primary SIGKILLed and the standby promoted.

Judged on the new primary and on an append-only log the handlers write (one line per
run: job, attempt): every job whose submit returned an id exists there and succeeded,
no attempt ran to its end twice, no job succeeded twice, and the daemons are the same
processes as before the kill, never fenced (they reconnected within their lease).
The figures: jobs submitted, submits refused while the primary was away, lost, doubled,
and the seconds from the kill to the first placement on the new primary.

``python -m tests.fleet.failover [--jobs N]`` prints them (the test asserts them).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
from tests.fleet.daemons import Daemons
from tests.fleet.servers import PgServer, remove, scratch
from tests.polling import wait_for

from taskyard.api.yard import Yard

HANDLER = "python:fleet_handlers:record"


def standby_pair(folder: Path) -> tuple[PgServer, PgServer]:
    """A primary whose commits wait for ``standby1``, and that standby, streaming."""
    primary = PgServer.create(folder / "primary", {"synchronous_commit": "on"})
    standby = primary.standby(folder / "standby", name="standby1")
    # Set after the copy: the standby, once promoted, must not wait for a standby itself.
    primary.psql("ALTER SYSTEM SET synchronous_standby_names = 'standby1'",
                 "SELECT pg_reload_conf()")
    wait_for("the standby to be synchronous", lambda: primary.psql(
        "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")
        == "sync", timeout=120)
    return primary, standby


def run(folder: Path, jobs: int = 300, *, workers: int = 2, kill_after: float = 0.4,
        rate: float = 100.0, promote_after: float = 1.0) -> dict[str, Any]:
    """The scenario (see the module docstring); its figures. ``kill_after``: the share
    of the stream submitted before the kill; ``promote_after``: seconds without a
    primary before the standby is promoted (what a failover manager takes to decide)."""
    primary, standby = standby_pair(folder)
    url = (f"postgresql://taskyard@127.0.0.1:{primary.port},127.0.0.1:{standby.port}"
           "/taskyard?target_session_attrs=read-write")
    log = folder / "runs.log"
    log.touch()
    daemons = Daemons(folder)
    daemons.env["PYTHONPATH"] += f":{Path(__file__).parent}"
    daemons.env["FLEET_RUNS_LOG"] = str(log)
    try:
        daemons.run("--db", url, "init")
        daemons.run("--db", url, "task-type", "add", "record", "--handler", HANDLER)
        daemons.start("scheduler", "--db", url, "scheduler")
        for i in range(workers):
            daemons.start(f"worker-{i}", "--db", url, "worker", "--name", f"w{i}",
                          "--capacity", "2")
        pids = {name: p.pid for name, p in daemons.procs.items()}
        yard = Yard(url)
        wait_for("the workers", lambda: len([w for w in yard.workers()
                                             if w.state == "active"]) == workers, 120)
        accepted: list[int] = []
        refused: list[str] = []
        killed: list[float] = []

        def fail_over() -> None:
            primary.kill()
            killed.append(time.time())  # the primary is gone: nothing commits after this
            time.sleep(promote_after)
            standby.promote()

        failing = threading.Thread(target=fail_over)

        def submit_stream() -> None:
            for n in range(jobs):
                if n == int(jobs * kill_after):
                    failing.start()
                    wait_for("the kill", lambda: killed, timeout=60)
                try:
                    accepted.append(yard.submit("record", {"n": n}))
                except Exception as exc:  # the primary is away: counted
                    refused.append(" ".join(str(exc).split())[:200])
                    time.sleep(0.05)
                time.sleep(1 / rate)

        stream = threading.Thread(target=submit_stream)
        stream.start()
        stream.join(300)
        failing.join(300)
        first = _first_placement_after(standby, killed[0])
        for job_id in accepted:
            yard.wait(job_id, 120)
        yard.close()
        alive = daemons.alive()
        same = all(daemons.procs[n].pid == pid for n, pid in pids.items())
        logs = "".join(daemons.log(n) for n in daemons.procs)
        codes = daemons.stop()
        figures = _judge(standby, accepted, log)
        figures.update(
            submitted=jobs, submit_errors=len(refused), first_refusal=refused[:1],
            kill_to_first_placement_s=round(first - killed[0], 2),
            daemons_alive_throughout=alive == list(pids) and same,
            fenced=logs.count("event=self-fenced") + logs.count("event=expelled"),
            daemon_errors=logs.count(" ERROR "),
            exit_codes=sorted(set(codes.values())))
        return figures
    finally:
        daemons.stop()
        primary.stop()
        standby.stop()


def _first_placement_after(server: PgServer, moment: float) -> float:
    """The database time of the first attempt placed after ``moment`` (epoch seconds)."""
    def placed() -> float | None:
        try:
            with psycopg.connect(server.url, autocommit=True, connect_timeout=5) as conn:
                row = conn.execute("SELECT min(dispatched_at) FROM attempts WHERE "
                                   "dispatched_at > %s", (moment,)).fetchone()
        except psycopg.Error:
            return None
        return float(row[0]) if row and row[0] is not None else None

    found = wait_for("a placement on the new primary", placed, timeout=120)
    return float(found)


def _judge(server: PgServer, accepted: list[int], log: Path) -> dict[str, Any]:
    with psycopg.connect(server.url, autocommit=True) as conn:
        rows = dict(conn.execute("SELECT id, state FROM jobs WHERE id = ANY(%s)",
                                 (accepted,)).fetchall())
        twice = conn.execute("SELECT count(*) FROM (SELECT job_id FROM attempts WHERE state = "
                             "'succeeded' GROUP BY job_id HAVING count(*) > 1) d").fetchone()
        retried = conn.execute("SELECT count(*) FROM jobs WHERE attempt > 1").fetchone()
    runs = Counter(tuple(line.split()) for line in log.read_text().splitlines() if line)
    return {
        "accepted": len(accepted),
        "lost": sum(1 for j in accepted if j not in rows),
        "not_succeeded": sum(1 for j in accepted if rows.get(j) not in (None, "succeeded")),
        "succeeded_twice": int(twice[0]) if twice else -1,
        "attempt_ran_twice": sum(1 for n in runs.values() if n > 1),
        "jobs_with_a_second_attempt": int(retried[0]) if retried else -1,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    folder = scratch("taskyard-failover-")
    try:
        print(json.dumps(run(folder, args.jobs)))
    finally:
        remove(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
