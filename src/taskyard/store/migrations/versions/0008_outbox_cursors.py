"""Outbox followers' positions (``taskyard publisher``): the last event each one has
had confirmed by its broker, as the event log's commit-order cursor (transaction, id).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox_cursors",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("tx_id", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_outbox_cursors")),
    )


def downgrade() -> None:
    op.drop_table("outbox_cursors")
