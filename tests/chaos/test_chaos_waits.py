"""Chaos round for waits (issue 40), on SQLite and PostgreSQL: release graphs with an
approval, a signal wait and a sleep, while two schedulers and two workers (real CLI
processes) are SIGKILLed and restarted every second or so, and two deciders approve,
deny and signal the same jobs at the same moment — some signals before their wait is
awaiting, some approvals and waits never decided (they time out).

Judged from the database: every approval, wait and sleep ended exactly once (one
``job-completed`` or ``job-failed`` event, never both, never two), none is left
awaiting; of two deciders racing on one approval at most one was accepted, and the job
ended as that one decided; no signal completed a wait twice; every signal sent — early
or not — completed its wait, and every wait nobody signalled timed out.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from taskyard import Conflict, Yard
from taskyard.model.records import TaskTypeSpec

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

GRAPHS = 60
TIMEOUT = 25
"""Seconds an approval or a wait awaits at most (the undecided ones time out)."""
CHAOS_SECONDS = 35.0


def _release(i: int) -> dict[str, Any]:
    return {"routing": f"r{i}", "tasks": {
        "build": {"type": "step"},
        "approve": {"approval": {"timeout": TIMEOUT}, "requires": ["build"]},
        "ready": {"wait": {"signal": f"go-{i}", "timeout": TIMEOUT}, "requires": ["build"]},
        "settle": {"sleep": 2, "requires": ["build"]},
        "deploy": {"type": "step", "requires": ["approve", "ready", "settle"]},
        "rollback": {"type": "step", "requires": [{"label": "approve", "on": "failure"}]},
    }}


class Daemons:
    """Two schedulers and two workers, killed (SIGKILL) and restarted at random."""

    ROLES = ("s1", "s2", "w1", "w2")

    def __init__(self, db: str, logs: Path) -> None:
        self.db, self.logs = db, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kills: Counter[str] = Counter()
        logs.mkdir(parents=True, exist_ok=True)

    def start(self, role: str) -> None:
        base = [sys.executable, "-m", "taskyard", "--db", self.db]
        cmd = ([*base, "scheduler", "--interval", "0.3"] if role.startswith("s") else
               [*base, "worker", "--name", role, "--capacity", "4", "--lease", "3"])
        with (self.logs / f"{role}-{sum(self.kills.values())}.log").open("wb") as log:
            self.procs[role] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=log)

    def kill(self, role: str) -> None:
        proc = self.procs[role]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            self.kills["scheduler" if role.startswith("s") else "worker"] += 1

    def keep_up(self) -> None:
        for role in self.ROLES:
            if self.procs[role].poll() is not None:
                self.start(role)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Decider(threading.Thread):
    """Approves or denies every awaiting approval of the decided graphs, and sends
    their signals, racing the other decider on the same jobs."""

    def __init__(self, name: str, db: str, plan: dict[int, dict[str, Any]],
                 stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.yard = Yard(db, inline_cycle=False)
        self.plan, self.stop = plan, stop
        self.accepted: dict[int, str] = {}
        """Approval job id → the decision this decider had accepted."""
        self.completed: Counter[int] = Counter()
        """Wait job id → how many of this decider's signals completed it."""
        self.errors: list[str] = []

    def run(self) -> None:
        rng = random.Random(self.name)
        while not self.stop.is_set():
            for i, p in self.plan.items():
                # Half the waits get their signal blind (early, mostly: kept for them),
                # half once they await, both deciders at about the same moment.
                if p["signal"] and rng.random() < 0.3 and (
                        i % 2 or self.yard.get_job(p["ready"]).state == "awaiting"):
                    for job_id in self.yard.signal(f"go-{i}", payload={"i": i}, by=self.name):
                        self.completed[job_id] += 1
                if p["decision"] is None or p["approve"] in self.accepted:
                    continue
                if self.yard.get_job(p["approve"]).state != "awaiting":
                    continue
                decide = self.yard.approve if p["decision"] == "approved" else self.yard.deny
                try:
                    decide(p["approve"], note=self.name, by=self.name)
                except Conflict:
                    continue  # the other decider, or its timeout, came first
                except Exception as exc:  # a killed daemon's lock, a restart: say it
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                self.accepted[p["approve"]] = p["decision"]
            time.sleep(0.05)


def _terminal_events(yard: Yard) -> Counter[int]:
    ends: Counter[int] = Counter()
    after = None
    while True:
        page = yard.events(after_id=after, limit=1000)
        if not page:
            return ends
        for e in page:
            if e.topic in ("job-completed", "job-failed") and "kind" in e.payload:
                ends[int(e.payload["job_id"])] += 1
        after = page[-1].id


@pytest.mark.parametrize("db_url", ["sqlite", "pg"], indirect=True)
def test_waits_survive_killed_schedulers_and_workers(db_url: str, tmp_path: Path) -> None:
    yard = Yard(db_url, inline_cycle=False)
    yard.store.task_types.put(TaskTypeSpec("step", "shell:true"))
    rng = random.Random(40)
    plan: dict[int, dict[str, Any]] = {}
    daemons = Daemons(db_url, tmp_path / "logs")
    for role in Daemons.ROLES:
        daemons.start(role)
    for i in range(GRAPHS):
        graph_id = yard.submit_graph(_release(i))
        jobs = {j.label: j.id for j in yard.graph(graph_id).jobs}
        decided = i % 4 != 3  # every fourth: nobody decides nor signals; they time out
        plan[i] = {"graph": graph_id, **{k: jobs[k] for k in ("approve", "ready", "settle")},
                   "decision": (("denied" if rng.random() < 0.3 else "approved")
                                if decided else None), "signal": decided}
        if decided and i % 3 == 0:  # sent before the wait is awaiting: kept for it
            yard.signal(f"go-{i}", payload={"i": i, "early": True}, by="early")
    stop = threading.Event()
    deciders = [Decider(n, db_url, plan, stop) for n in ("ann", "bob")]
    for d in deciders:
        d.start()
    try:
        ends = time.monotonic() + CHAOS_SECONDS
        while time.monotonic() < ends:
            time.sleep(rng.uniform(0.7, 2.0))
            daemons.kill(rng.choice(Daemons.ROLES))
            time.sleep(rng.uniform(0.1, 0.6))
            daemons.keep_up()
        daemons.keep_up()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            states = [yard.get_job(p[k]).state for p in plan.values()
                      for k in ("approve", "ready", "settle")]
            if not any(s in ("waiting", "awaiting") for s in states):
                break
            time.sleep(1)
    finally:
        stop.set()
        for d in deciders:
            d.join(60)
        daemons.stop()
    assert daemons.kills["scheduler"] >= 3 and daemons.kills["worker"] >= 3, daemons.kills
    ends_seen = _terminal_events(yard)
    problems: list[str] = []
    for i, p in plan.items():
        approve, ready, settle = (yard.get_job(p[k]) for k in ("approve", "ready", "settle"))
        for job in (approve, ready, settle):
            if ends_seen[job.id] != 1:
                problems.append(f"graph {i}: {job.label} ended {ends_seen[job.id]} times "
                                f"(state {job.state})")
        if settle.state != "succeeded":
            problems.append(f"graph {i}: the sleep is {settle.state}")
        accepted = [(d.name, d.accepted[approve.id]) for d in deciders
                    if approve.id in d.accepted]
        if len(accepted) > 1:
            problems.append(f"graph {i}: both deciders' decisions were accepted: {accepted}")
        result = approve.result or {}
        if accepted:
            who, decision = accepted[0]
            want = "succeeded" if decision == "approved" else "failed"
            if (approve.state, result.get("decision"), result.get("by")) != (
                    want, decision, who):
                problems.append(f"graph {i}: {who} {decision} it, yet it is {approve.state} "
                                f"with {result}")
        elif approve.state != "failed" or result.get("decision") != "timed_out":
            problems.append(f"graph {i}: undecided approval is {approve.state} with {result}")
        completions = sum(d.completed[ready.id] for d in deciders)
        if completions > 1:
            problems.append(f"graph {i}: signals completed its wait {completions} times")
        if p["signal"]:
            if ready.state != "succeeded" or (ready.result or {}).get("i") != i:
                problems.append(f"graph {i}: signalled wait is {ready.state} ({ready.result})")
        elif ready.state != "failed":
            problems.append(f"graph {i}: a wait nobody signalled is {ready.state}")
    errors = [e for d in deciders for e in d.errors]
    print({"kills": dict(daemons.kills), "decider_errors": len(errors),
           "accepted": sum(len(d.accepted) for d in deciders),
           "signal_completions": sum(sum(d.completed.values()) for d in deciders)})
    assert not problems, "\n".join(problems[:40])
    assert sum(len(d.accepted) for d in deciders) > GRAPHS // 3  # the races took place
    assert sum(sum(d.completed.values()) for d in deciders) > 0
