"""Approvals, waits and sleeps, written once for both backends: the deadline of jobs
that became awaiting, their guarded ends, signals stored and matched, the timer read.

Statements that name jobs by id test the state as ``(state = 'awaiting') IS TRUE``: no
index on the state can serve that, so the primary key is the plan, never a walk of
every awaiting job (the partial indexes over them serve the statements that read
awaiting jobs by deadline or by signal)."""

from __future__ import annotations

from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.driver.wait_params import EndAwaiting, FirstSignals, SendSignal, StartAwaiting

IS_AWAITING = "(state = 'awaiting') IS TRUE"
AWAITING = "state = 'awaiting'"
"""Awaiting jobs, as the partial indexes over them are written."""
DUE_AWAITING = f"{AWAITING} AND deadline <= {{now}}"
"""An awaiting job whose timeout (a sleep's end) has passed: through the timer index
(``ix_jobs_awaiting_deadline``), whatever the number of awaiting jobs."""


def start_awaiting(raw: Cursor, params: StartAwaiting) -> list[tuple[Any, ...]]:
    """Their deadline (and, ``anew``, when signals start to count); per job still
    awaiting: (id, kind, signal, key, signals counted from, graph, routing, deadline)."""
    which, ids = raw.member("id", params.ids)
    anew = "signals_after = {now}, " if params.anew else ""
    return raw.all(
        f"UPDATE jobs SET {anew}deadline = {{now}} + timeout WHERE {which} AND {IS_AWAITING} "
        "RETURNING id, kind, signal_name, signal_key, COALESCE(signals_after, created_at), "
        "graph_id, routing, deadline", ids)


def first_signals(raw: Cursor, params: FirstSignals) -> dict[int, tuple[Any, ...]]:
    """Per wait of ``params.waits``, the first signal of its name (with its key; None:
    any key) sent at or after the time given: (id, payload, sender); waits that have
    none are left out. (PostgreSQL takes each name's lock first: postgresql/driver.py.)"""
    found: dict[int, tuple[Any, ...]] = {}
    for job, name, key, since in params.waits:
        keyed = "" if key is None else "AND key = ? "
        row = raw.first(f"SELECT id, payload, sent_by FROM signals WHERE name = ? {keyed}"
                        "AND created_at >= ? ORDER BY created_at, id LIMIT 1",
                        (name, *(() if key is None else (key,)), since))
        if row is not None:
            found[job] = row
    return found


def end_awaiting(raw: Cursor, params: EndAwaiting) -> list[tuple[Any, ...]]:
    """The awaiting jobs of ``params.ids`` end (guarded by their state, their kind and,
    ``due``, their deadline): (id, graph, routing, kind) of those that did."""
    which, ids = raw.member("id", params.ids)
    kinds, names = raw.member("kind", params.kinds)
    due = " AND deadline <= {now}" if params.due else ""
    return raw.all(
        "UPDATE jobs SET state = ?, result = ?, finished_at = {now}, deadline = NULL "
        f"WHERE {which} AND {IS_AWAITING} AND {kinds}{due} "
        "RETURNING id, graph_id, routing, kind",
        (params.state, params.result, *ids, *names))


def send_signal(raw: Cursor, params: SendSignal) -> list[tuple[Any, ...]]:
    """Store the signal, then complete every awaiting wait it matches (its name, and its
    key when the wait has one) with its payload: (id, graph, routing, kind) of those.
    (PostgreSQL takes the name's lock first: postgresql/driver.py.)"""
    raw.run("INSERT INTO signals (name, key, payload, sent_by, created_at) "
            "VALUES (?, ?, ?, ?, {now})", (params.name, params.key, params.payload, params.by))
    keyed = "signal_key IS NULL" if params.key is None else \
        "(signal_key IS NULL OR signal_key = ?)"
    return raw.all(
        "UPDATE jobs SET state = 'succeeded', result = ?, finished_at = {now}, "
        "deadline = NULL WHERE state = 'awaiting' AND kind = 'wait' AND signal_name = ? "
        f"AND {keyed} RETURNING id, graph_id, routing, kind",
        (params.payload, params.name, *(() if params.key is None else (params.key,))))


def read_due_awaiting(raw: Cursor, limit: int, *, index: str = "") -> list[tuple[Any, ...]]:
    """Awaiting jobs past their deadline, the earliest first, at most ``limit``: (id,
    kind). ``index``: how a backend must be told to use the timer index."""
    return raw.all(f"SELECT id, kind FROM jobs {index} WHERE {DUE_AWAITING} "
                   "ORDER BY deadline LIMIT ?", (limit,))


def read_kind(raw: Cursor, job_id: int) -> tuple[Any, ...] | None:
    """(kind, state) of job ``job_id``; None if there is none."""
    return raw.first("SELECT kind, state FROM jobs WHERE id = ?", (job_id,))


def count_timers(raw: Cursor, horizon: float) -> int:
    """Awaiting jobs whose timeout (a sleep's end) falls within ``horizon`` seconds."""
    row = raw.first("SELECT COUNT(*) FROM jobs WHERE state = 'awaiting' "
                    "AND deadline <= {now} + ?", (horizon,))
    assert row is not None
    return int(row[0])


def signal_lock(name: str) -> str:
    """The key a signal and the waits for it serialise on (PostgreSQL)."""
    return f"signal:{name}"


__all__ = ["AWAITING", "DUE_AWAITING", "IS_AWAITING", "count_timers", "end_awaiting",
           "first_signals", "read_due_awaiting", "read_kind", "send_signal", "signal_lock",
           "start_awaiting"]
