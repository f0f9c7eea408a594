"""Backfill, catch-up window and overlap: ``jobs.logical_time`` (the tick a schedule's
job stands for), ``schedules.catchup_window`` and ``schedules.overlap``.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("logical_time", sa.Float(precision=53), nullable=True))
    op.add_column("schedules", sa.Column("catchup_window", sa.Float(precision=53),
                                         nullable=True))
    op.add_column("schedules", sa.Column("overlap", sa.String(20), nullable=False,
                                         server_default="allow"))


def downgrade() -> None:
    op.drop_column("schedules", "overlap")
    op.drop_column("schedules", "catchup_window")
    op.drop_column("jobs", "logical_time")
