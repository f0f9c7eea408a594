"""Pausing a pool: ``pools.paused`` (nothing new is placed in it) and ``paused_at``.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pools", sa.Column("paused", sa.Boolean(), nullable=False,
                                     server_default=sa.text("false")))
    op.add_column("pools", sa.Column("paused_at", sa.Float(precision=53), nullable=True))


def downgrade() -> None:
    op.drop_column("pools", "paused_at")
    op.drop_column("pools", "paused")
