"""SQLite wake-ups carry jobs: what a worker's last notification carried, beside the
channel's counter (``wakeups.payload``, see dialects/wakeup_jobs.py). PostgreSQL sends
its payloads with NOTIFY and leaves the column empty.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("wakeups") as batch:
        batch.add_column(sa.Column("payload", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("wakeups") as batch:
        batch.drop_column("payload")
