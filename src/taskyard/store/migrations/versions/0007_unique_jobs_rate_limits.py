"""Unique jobs and rate limits: ``jobs.unique_key`` (with the index a unique submit
looks its key up in), ``jobs.rate_key`` (rendered at submit), ``task_types.rate_limit``
and ``rate_key`` (the template), and ``rate_starts``, the dispatches of rate-limited
jobs by key.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_UNIQUE = "unique_key IS NOT NULL"


def upgrade() -> None:
    op.add_column("task_types", sa.Column("rate_limit", sa.String(length=40), nullable=True))
    op.add_column("task_types", sa.Column("rate_key", sa.Text(), nullable=True))
    op.add_column("jobs", sa.Column("unique_key", sa.String(length=400), nullable=True))
    op.add_column("jobs", sa.Column("rate_key", sa.Text(), nullable=True))
    op.create_index("ix_jobs_type_unique_key", "jobs", ["type", "unique_key", "id"],
                    sqlite_where=sa.text(_UNIQUE), postgresql_where=sa.text(_UNIQUE))
    id_type = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "rate_starts",
        sa.Column("id", id_type, autoincrement=True, nullable=False),
        sa.Column("type", sa.String(length=200), nullable=False),
        sa.Column("rate_key", sa.Text(), nullable=False),
        sa.Column("at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rate_starts")),
    )
    op.create_index("ix_rate_starts_type_rate_key_at", "rate_starts", ["type", "rate_key", "at"])
    op.create_index("ix_rate_starts_at", "rate_starts", ["at"])


def downgrade() -> None:
    op.drop_table("rate_starts")
    op.drop_index("ix_jobs_type_unique_key", table_name="jobs")
    for table, column in (("jobs", "rate_key"), ("jobs", "unique_key"),
                          ("task_types", "rate_key"), ("task_types", "rate_limit")):
        op.drop_column(table, column)
