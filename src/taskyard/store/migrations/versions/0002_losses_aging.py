"""Worker-loss budget per task type and job; the job's own priority kept apart from its aged one.

Plain ``ADD COLUMN`` (no table copy on SQLite): the new columns carry no constraints,
their values are checked where they are written.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("task_types", "jobs"):
        op.add_column(table, sa.Column("max_worker_losses", sa.Integer(), nullable=False,
                                       server_default="3"))
    op.add_column("jobs", sa.Column("base_priority", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "base_priority")
    for table in ("jobs", "task_types"):
        op.drop_column(table, "max_worker_losses")
