"""Tables of what operators look at (re-exported by :mod:`taskyard.store.schema`):
history rollups, the scheduling cycles' durations summed over every process, and the
output attempts write while they run."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKeyConstraint,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

from taskyard.store.schema.base import Time, metadata

history = Table(
    "history",
    metadata,
    # Migration 0016 (core/history.py): per bucket of each granularity (seconds; 0 is
    # all time), first-choice pool and task type, what happened to jobs. Written by the
    # history follower (store/transitions/history.py) as it reads the event log.
    Column("granularity", Integer, nullable=False),
    Column("bucket", Time, nullable=False),
    Column("pool", String(200), nullable=False),
    Column("type", String(200), nullable=False),
    Column("arrived", BigInteger, nullable=False, server_default="0"),
    Column("started", BigInteger, nullable=False, server_default="0"),
    Column("succeeded", BigInteger, nullable=False, server_default="0"),
    Column("failed", BigInteger, nullable=False, server_default="0"),
    Column("errored", BigInteger, nullable=False, server_default="0"),
    Column("canceled", BigInteger, nullable=False, server_default="0"),
    Column("finished", BigInteger, nullable=False, server_default="0"),
    Column("wait_sum", Time, nullable=False, server_default="0"),
    Column("wait_hist", Text, nullable=False),
    Column("cycle_sum", Time, nullable=False, server_default="0"),
    Column("cycle_hist", Text, nullable=False),
    Column("depth_sum", Time, nullable=False, server_default="0"),
    Column("depth_n", BigInteger, nullable=False, server_default="0"),
    Column("depth_max", BigInteger, nullable=False, server_default="0"),
    PrimaryKeyConstraint("granularity", "bucket", "pool", "type"),
)

duration_totals = Table(
    "duration_totals",
    metadata,
    # Migration 0016: a histogram summed over every process that adds to it (the
    # scheduling cycles' durations: /metrics gives the same on every server).
    Column("name", String(200), primary_key=True),
    Column("bounds", Text, nullable=False),
    Column("counts", Text, nullable=False),
    Column("total", Time, nullable=False, server_default="0"),
    Column("updated_at", Time, nullable=False),
)

log_chunks = Table(
    "log_chunks",
    metadata,
    # Migration 0016 (store/transitions/logs.py): what a running attempt wrote, in the
    # order it was read (seq, per attempt, both streams), each chunk where it ends in its
    # stream (``upto``, in bytes); the oldest are dropped past the worker's bound.
    Column("job_id", BigInteger, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("stream", String(6), nullable=False),
    Column("upto", BigInteger, nullable=False),
    Column("data", Text, nullable=False),
    Column("created_at", Time, nullable=False),
    PrimaryKeyConstraint("job_id", "attempt", "seq"),
    ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
)
