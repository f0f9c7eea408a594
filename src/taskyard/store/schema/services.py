"""Tables of the services around the jobs: rate-limit starts, outbox followers'
positions, SQLite's wake-up counters, the scheduler's single row, the worker gate and
the HTTP API's tokens (re-exported by :mod:`taskyard.store.schema`)."""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Column, Index, Integer, String, Table, Text

from taskyard.store.schema.base import Id, Time, metadata, partial_index

# Migration 0007: when the cycle dispatched each job of a rate-limited type, by key; read
# per key met (the first index), forgotten past the longest window (the second).
rate_starts = Table(
    "rate_starts", metadata, Column("id", Id, primary_key=True, autoincrement=True),
    Column("type", String(200), nullable=False), Column("rate_key", Text, nullable=False),
    Column("at", Time, nullable=False),
    Index("ix_rate_starts_type_rate_key_at", "type", "rate_key", "at"),
    Index("ix_rate_starts_at", "at"),
)

outbox_cursors = Table(
    "outbox_cursors",
    metadata,
    # Migration 0008: how far each outbox follower (the RabbitMQ publisher, by name) has
    # delivered the event log: the last event the broker confirmed, as an EventCursor
    # (the writing transaction and the event id; tx_id is 0 on SQLite, -1 before any).
    Column("name", String(200), primary_key=True),
    Column("tx_id", BigInteger, nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("updated_at", Time, nullable=False),
)

wakeups = Table(
    "wakeups",
    metadata,
    # SQLite's stand-in for LISTEN/NOTIFY channels: a notification bumps ``n`` and
    # sets ``payload``, the jobs it carries to a worker ("" or NULL: none).
    Column("channel", String(200), primary_key=True),
    Column("n", BigInteger, nullable=False, server_default="0"),
    Column("payload", Text, nullable=True),
)

scheduler_state = Table(
    "scheduler_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("cycles", BigInteger, nullable=False, server_default="0"),
    Column("holder", String(200)),
    Column("last_cycle_started_at", Time),
    Column("last_cycle_finished_at", Time),
    CheckConstraint("id = 1", name="single_row"),
)

worker_gate = Table(
    "worker_gate",
    metadata,
    # Migration 0011: always empty; only its lock matters (PostgreSQL). A submit that
    # finds no live worker wakes nobody, and its statement names this table, so it holds
    # the table's lock from before its snapshot until it commits. A worker registers
    # under ACCESS EXCLUSIVE on it: its registration commits after every such submit
    # that could have missed it (the cycle it wakes sees their jobs), and before any
    # later one takes its snapshot (which then sees the worker). SQLite's writers queue
    # on its write lock instead.
    Column("id", Integer, primary_key=True),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    # Migration 0006: bearer tokens of the HTTP API. Only a SHA-256 of each token is kept
    # (tokens are 256 random bits: a slow hash would add nothing but latency per request).
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("hash", String(64), nullable=False),
    Column("scope", String(10), nullable=False),
    Column("created_at", Time, nullable=False),
    Column("revoked_at", Time),
    Column("last_used_at", Time),
    Column("expires_at", Time),  # migration 0012: NULL never expires
    CheckConstraint("scope IN ('read', 'write', 'admin')", name="scope_known"),
    Index("uq_api_tokens_hash", "hash", unique=True),
    # A name is taken while its token is live; a revoked one's name may be reused.
    Index("uq_api_tokens_live_name", "name", unique=True, **partial_index("revoked_at IS NULL")),
)
