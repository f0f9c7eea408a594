"""Events record their writing transaction (PostgreSQL), so that readers never pass an
event committed after a later one: ``events.tx_id`` (a default on PostgreSQL, NULL on
SQLite, which commits in id order) and the index readers follow.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from taskyard.store.schema import EVENT_TX_DEFAULT

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("tx_id", sa.BigInteger(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute(EVENT_TX_DEFAULT)
        # Events written before: older than any transaction to come.
        op.execute("UPDATE events SET tx_id = 0 WHERE tx_id IS NULL")
        op.create_index("ix_events_tx_id", "events", ["tx_id", "id"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_events_tx_id", table_name="events")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("tx_id")
