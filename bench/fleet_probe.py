"""What ``bench.fleet`` reads off the machine and the database while a fleet runs:
CPU time of process trees (``/proc``), connections by daemon (``pg_stat_activity``,
each daemon named by ``PGAPPNAME``), statements (``pg_stat_statements``) and
transactions (``pg_stat_database``) over a window."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def tree_cpu(roots: list[int]) -> float:
    """CPU seconds (user + system) used so far by ``roots`` and every descendant alive,
    plus what the roots' exited children used (``cutime``/``cstime``: a backend that
    ended during the window still counts)."""
    tree = _children()
    total = 0.0
    seen: set[int] = set()
    todo = [(pid, True) for pid in roots]
    while todo:
        pid, root = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = _stat(pid)
        if fields is None:
            continue
        # fields[11..14]: utime, stime, cutime, cstime (after pid and comm).
        used = int(fields[11]) + int(fields[12])
        if root:
            used += int(fields[13]) + int(fields[14])
        total += used / TICK
        todo += [(child, False) for child in tree.get(pid, [])]
    return total


def kernel_threads() -> dict[str, float]:
    """CPU seconds used so far by each kernel thread (the children of ``kthreadd``, by
    name): the machine's own work beside the fleet's. On this VM a DAMON reclaim thread
    (``kdamond.0``, pageout of cold memory, up to 50 ms a second) runs in bursts of
    25-30 ms, and the jobs submitted during one wait for a CPU (bench.fleet)."""
    used: dict[str, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is None or fields[1] != "2":
            continue
        try:
            name = Path(f"/proc/{entry.name}/comm").read_text().strip()
        except OSError:
            continue
        used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
    return used


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def pss_mib(pids: list[int]) -> float:
    """Proportional set size of ``pids`` together (shared pages split among sharers)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
    return total / 1024


def descendants(pid: int) -> list[int]:
    tree = _children()
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def connections(dsn: str) -> dict[str, Any]:
    """Client connections to the database now, by kind of daemon (the ``PGAPPNAME``
    prefix) and per daemon: the most one holds, and in which states."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT application_name, state, count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() "
            "GROUP BY 1, 2").fetchall()
    per_daemon: Counter[str] = Counter()
    states: Counter[str] = Counter()
    total = 0
    for name, state, n in rows:
        total += n
        per_daemon[name or "?"] += n
        states[state or "?"] += n
    kinds: dict[str, list[int]] = {}
    for name, n in per_daemon.items():
        kinds.setdefault(name.split("-")[0] if "-" in name else name, []).append(n)
    return {"total": total, "states": dict(states),
            "by_kind": {k: {"daemons": len(v), "connections": sum(v), "most": max(v)}
                        for k, v in sorted(kinds.items())}}


@dataclass
class DbCounters:
    at: float
    statements: int
    transactions: int
    sessions: int
    cpu: float
    daemons_cpu: float


class Window:
    """Counters read at its start and end: rates per second over the window."""

    def __init__(self, dsn: str, server_pid: int, daemon_pids: list[int]) -> None:
        self.dsn = dsn
        self.server_pid = server_pid
        self.daemon_pids = daemon_pids

    def read(self) -> DbCounters:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            statements = conn.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements").fetchone()
            xacts = conn.execute(
                "SELECT xact_commit + xact_rollback, sessions FROM pg_stat_database "
                "WHERE datname = current_database()").fetchone()
        assert statements is not None and xacts is not None
        return DbCounters(time.monotonic(), int(statements[0]), int(xacts[0]), int(xacts[1]),
                          tree_cpu([self.server_pid]), tree_cpu(self.daemon_pids))

    def reset(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")

    def top(self, limit: int = 8, order: str = "calls") -> list[dict[str, Any]]:
        """The statements called most (or ``order="total_exec_time"``: that took the
        most time) since the reset (a profile of the window)."""
        assert order in ("calls", "total_exec_time")
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT calls, round(total_exec_time::numeric, 1), rows, plans, "
                "round(total_plan_time::numeric, 1), "
                "left(regexp_replace(query, '\\s+', ' ', 'g'), 90) "
                f"FROM pg_stat_statements ORDER BY {order} DESC LIMIT %s", (limit,)).fetchall()
        # rows: what the statements returned or changed (a cycle's reads run under its
        # lock return a row only when the lock was ours: how often a submit placed its
        # own job).
        # plans, plan_ms: with pg_stat_statements.track_planning on (bench.fleet
        # --track-planning), else 0.
        return [{"calls": c, "ms": float(ms), "rows": int(n), "plans": int(p),
                 "plan_ms": float(pms), "query": q} for c, ms, n, p, pms, q in rows]

    @staticmethod
    def rates(a: DbCounters, b: DbCounters) -> dict[str, float]:
        span = b.at - a.at
        return {
            "seconds": round(span, 1),
            # The window's own two reads are left out (a few statements).
            "statements_per_s": round(max(0, b.statements - a.statements - 2) / span, 1),
            "transactions_per_s": round(max(0, b.transactions - a.transactions - 3) / span, 1),
            "connects_per_s": round(max(0, b.sessions - a.sessions - 1) / span, 1),
            "db_cpu_percent": round(100 * (b.cpu - a.cpu) / span, 1),
            "daemons_cpu_percent": round(100 * (b.daemons_cpu - a.daemons_cpu) / span, 1),
        }


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
