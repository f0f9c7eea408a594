"""Tables of what operators look at (re-exported by :mod:`taskyard.store.schema`):
history rollups, and the scheduling cycles' durations summed over every process."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, PrimaryKeyConstraint, String, Table, Text

from taskyard.store.schema.base import Time, metadata

history = Table(
    "history",
    metadata,
    # Migration 0013 (core/history.py): per bucket of each granularity (seconds; 0 is
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
    # Migration 0013: a histogram summed over every process that adds to it (the
    # scheduling cycles' durations: /metrics gives the same on every server).
    Column("name", String(200), primary_key=True),
    Column("bounds", Text, nullable=False),
    Column("counts", Text, nullable=False),
    Column("total", Time, nullable=False, server_default="0"),
    Column("updated_at", Time, nullable=False),
)
