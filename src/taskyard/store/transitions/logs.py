"""Live output: the chunks of stdout and stderr a worker reads from its running attempts,
written as they come (a few times a second), read back by ``job logs --follow``, the
API's log stream and the job page.

Writes are fenced like every other report of an attempt: accepted only from the worker
that runs it, while that worker holds its lease and the attempt is the job's current one
and was not taken from it (a canceled attempt's last words are kept; a fenced one's
later ones are not). Each attempt keeps the newest ``limit`` bytes of each stream: older
chunks are dropped as new ones come.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import and_, delete, insert, select, tuple_

from taskyard.core.states import AttemptState
from taskyard.store import schema as t

if TYPE_CHECKING:
    from taskyard.store import Store

_L, _A, _J, _W = t.log_chunks, t.attempts, t.jobs, t.workers
STREAMS = ("stdout", "stderr")


@dataclass(frozen=True, slots=True)
class LogChunk:
    """What attempt (``job_id``, ``attempt``) wrote to ``stream`` since its last chunk;
    ``upto``: the stream's length in bytes after it; ``seq``: its place in the attempt's
    output (both streams, from 1)."""

    job_id: int
    attempt: int
    seq: int
    stream: str
    upto: int
    data: str


def append_logs(store: Store, worker_id: int, chunks: Sequence[LogChunk], *,
                limit: int) -> set[tuple[int, int]]:
    """Write the chunks of the attempts this worker may still write for, in one
    transaction; drop what falls out of each stream's last ``limit`` bytes. Returns the
    attempts refused (fenced: the worker should stop them)."""
    keys = sorted({(c.job_id, c.attempt) for c in chunks})
    if not keys:
        return set()
    with store.write() as tx:
        # Read, not locked: a lock on the attempt (and on its job, through the join or
        # the foreign key's check) taken here, while a completion holds the job and
        # waits for the attempt, deadlocks on PostgreSQL. A fence committed while this
        # runs lets its chunks in: the last words of a moment, as a cancel's are.
        allowed_query = (
            select(_A.c.job_id, _A.c.attempt)
            .join(_J, and_(_J.c.id == _A.c.job_id, _J.c.attempt == _A.c.attempt))
            .where(tuple_(_A.c.job_id, _A.c.attempt).in_(keys), _A.c.worker_id == worker_id,
                   _A.c.state != AttemptState.LOST.value,
                   select(_W.c.id).where(_W.c.id == worker_id, _W.c.state == "active",
                                         _W.c.lease_expires_at >= store.now_expr).exists()))
        allowed = {(int(j), int(a)) for j, a in tx.conn.execute(allowed_query)}
        kept = [c for c in chunks if (c.job_id, c.attempt) in allowed]
        if kept:
            now = float(tx.conn.execute(select(store.now_expr)).scalar_one())
            tx.conn.execute(insert(_L), [
                {"job_id": c.job_id, "attempt": c.attempt, "seq": c.seq, "stream": c.stream,
                 "upto": c.upto, "data": c.data, "created_at": now} for c in kept])
            upto: dict[tuple[int, int, str], int] = defaultdict(int)
            for c in kept:
                key = (c.job_id, c.attempt, c.stream)
                upto[key] = max(upto[key], c.upto)
            for (job_id, attempt, stream), end in upto.items():
                if end > limit:
                    tx.conn.execute(delete(_L).where(
                        _L.c.job_id == job_id, _L.c.attempt == attempt,
                        _L.c.stream == stream, _L.c.upto <= end - limit))
    return set(keys) - allowed


@dataclass(frozen=True, slots=True)
class LogRead:
    """An attempt's chunks after a point, and where its output stands."""

    chunks: list[LogChunk]
    state: str | None
    """The attempt's state (None: no such attempt yet)."""
    latest: int
    """The job's latest attempt number (0: none yet)."""
    job_state: str


def read_logs(store: Store, job_id: int, attempt: int, *, after: int = 0,
              limit: int = 1000) -> LogRead | None:
    """Chunks ``after`` seq ``after`` of the attempt (at most ``limit``), with the
    attempt's and the job's state; None if there is no such job."""
    with store.read() as tx:
        job = tx.conn.execute(select(_J.c.state, _J.c.attempt)
                              .where(_J.c.id == job_id)).first()
        if job is None:
            return None
        state = tx.conn.execute(select(_A.c.state).where(
            _A.c.job_id == job_id, _A.c.attempt == attempt)).scalar()
        rows = tx.conn.execute(
            select(_L.c.seq, _L.c.stream, _L.c.upto, _L.c.data)
            .where(_L.c.job_id == job_id, _L.c.attempt == attempt, _L.c.seq > after)
            .order_by(_L.c.seq).limit(limit)).all()
    return LogRead([LogChunk(job_id, attempt, int(r.seq), r.stream, int(r.upto), r.data)
                    for r in rows], state, int(job.attempt), str(job.state))


def attempt_output(store: Store, job_id: int, attempt: int) -> tuple[str, str] | None:
    """The stdout and stderr an attempt's chunks hold (the newest ``limit`` bytes the
    worker kept of each), or None if it has none (it wrote nothing yet, or ran before
    live output)."""
    with store.read() as tx:
        rows = tx.conn.execute(
            select(_L.c.stream, _L.c.data).where(_L.c.job_id == job_id,
                                                 _L.c.attempt == attempt)
            .order_by(_L.c.seq)).all()
    if not rows:
        return None
    parts: dict[str, list[str]] = {s: [] for s in STREAMS}
    for stream, data in rows:
        parts.setdefault(stream, []).append(data)
    return "".join(parts["stdout"]), "".join(parts["stderr"])
