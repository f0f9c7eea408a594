"""What operators read and act from (issue 41): jobs search by label and in the order
they ended (``store/reads/job_search.py``); history rollups and the scheduling cycles'
durations summed over processes; the output attempts write while they run
(``store/schema/operations.py``).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _partial(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


def upgrade() -> None:
    counts = [sa.Column(name, sa.BigInteger(), nullable=False, server_default="0")
              for name in ("arrived", "started", "succeeded", "failed", "errored", "canceled",
                           "finished")]
    op.create_table(
        "history",
        sa.Column("granularity", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.Float(precision=53), nullable=False),
        sa.Column("pool", sa.String(200), nullable=False),
        sa.Column("type", sa.String(200), nullable=False),
        *counts,
        sa.Column("wait_sum", sa.Float(precision=53), nullable=False, server_default="0"),
        sa.Column("wait_hist", sa.Text(), nullable=False),
        sa.Column("cycle_sum", sa.Float(precision=53), nullable=False, server_default="0"),
        sa.Column("cycle_hist", sa.Text(), nullable=False),
        sa.Column("depth_sum", sa.Float(precision=53), nullable=False, server_default="0"),
        sa.Column("depth_n", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("depth_max", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("granularity", "bucket", "pool", "type", name="pk_history"),
    )
    op.create_table(
        "duration_totals",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("bounds", sa.Text(), nullable=False),
        sa.Column("counts", sa.Text(), nullable=False),
        sa.Column("total", sa.Float(precision=53), nullable=False, server_default="0"),
        sa.Column("updated_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_duration_totals"),
    )
    op.create_table(
        "log_chunks",
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("stream", sa.String(6), nullable=False),
        sa.Column("upto", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "attempt", "seq", name="pk_log_chunks"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE",
                                name="fk_log_chunks_job_id_jobs"),
    )
    op.create_index("ix_jobs_label_id", "jobs", ["label", "id"],
                    **_partial("label IS NOT NULL"))
    op.create_index("ix_jobs_finished_id", "jobs", ["finished_at", "id"],
                    **_partial("finished_at IS NOT NULL"))


def downgrade() -> None:
    op.drop_table("log_chunks")
    op.drop_table("duration_totals")
    op.drop_table("history")
    op.drop_index("ix_jobs_finished_id", "jobs")
    op.drop_index("ix_jobs_label_id", "jobs")
