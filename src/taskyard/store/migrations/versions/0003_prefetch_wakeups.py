"""Worker prefetch window, per-channel wake-up counters for SQLite listeners, the
placement index per list of pools, and partial indexes for the job columns most jobs
leave empty.

``workers.prefetch``: jobs the cycle may place on a worker beyond its capacity (the
worker queues them and starts each as a slot frees; it sets the window itself from
how long its jobs take). ``wakeups``: on SQLite, a notification bumps its channel's
counter, so a listener wakes for its own channel only, not for every commit.
The graph, dedup-key and schedule indexes of ``jobs`` leave out the rows without
one: every state change of a job rewrites its entry in each index it is in.

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


_PARTIAL = {
    "ix_jobs_graph_label": (["graph_id", "label"], False, "graph_id IS NOT NULL"),
    "uq_jobs_dedup_key": (["dedup_key"], True, "dedup_key IS NOT NULL"),
    "ix_jobs_schedule": (["schedule_name", "id"], False, "schedule_name IS NOT NULL"),
}


def upgrade() -> None:
    op.drop_index("ix_jobs_pending_order", table_name="jobs")
    op.create_index("ix_jobs_pending_pools", "jobs", ["pools", sa.text("priority DESC"), "id"],
                    sqlite_where=sa.text("state = 'pending'"),
                    postgresql_where=sa.text("state = 'pending'"))
    for name, (columns, unique, where) in _PARTIAL.items():
        op.drop_index(name, table_name="jobs")
        op.create_index(name, "jobs", columns, unique=unique,
                        sqlite_where=sa.text(where), postgresql_where=sa.text(where))
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
    for name, (columns, unique, _) in _PARTIAL.items():
        op.drop_index(name, table_name="jobs")
        op.create_index(name, "jobs", columns, unique=unique)
    op.drop_index("ix_jobs_pending_pools", table_name="jobs")
    op.create_index("ix_jobs_pending_order", "jobs", [sa.text("priority DESC"), "id"],
                    sqlite_where=sa.text("state = 'pending'"),
                    postgresql_where=sa.text("state = 'pending'"))
