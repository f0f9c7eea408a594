"""Worker prefetch window, and per-channel wake-up counters for SQLite listeners.

``workers.prefetch``: jobs the cycle may place on a worker beyond its capacity (the
worker queues them and starts each as a slot frees; it sets the window itself from
how long its jobs take). ``wakeups``: on SQLite, a notification bumps its channel's
counter, so a listener wakes for its own channel only, not for every commit.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("workers", sa.Column("prefetch", sa.Integer(), nullable=False,
                                       server_default="0"))
    op.create_table(
        "wakeups",
        sa.Column("channel", sa.String(length=200), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("channel", name=op.f("pk_wakeups")),
    )


def downgrade() -> None:
    op.drop_table("wakeups")
    op.drop_column("workers", "prefetch")
