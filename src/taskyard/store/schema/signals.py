"""The signals table (re-exported by :mod:`taskyard.store.schema`): what waits wait for."""

from __future__ import annotations

from sqlalchemy import Column, Index, String, Table, Text

from taskyard.store.schema.base import Id, Time, metadata

signals = Table(
    "signals",
    metadata,
    # Migration 0013: every signal sent (``taskyard signal``), kept so that a wait that
    # becomes awaiting after it was sent, but was submitted before, still gets it.
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("key", String(400)),
    Column("payload", Text),
    Column("sent_by", String(200)),
    Column("created_at", Time, nullable=False),
    Index("ix_signals_name_created_at", "name", "created_at"),
    Index("ix_signals_name_key_created_at", "name", "key", "created_at"),
)
