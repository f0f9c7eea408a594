"""Jobs delayed to a time stay out of the placement index: ``jobs.delayed_until``.

A pending job with a ``run_after`` (or a retry's delay) has ``delayed_until`` set until
the cycle's maintenance finds it due and clears it (the staging step,
``portable/cycle.py:stage_due_jobs``). The placement index ``ix_jobs_pending_pools``
holds only pending jobs without it, and ``ix_jobs_delayed`` holds the delayed ones by
time: a backlog of jobs for later no longer costs each cycle a walk past all of it.
Pending and waiting jobs with a ``run_after`` when this runs are delayed as new ones
would be (those already due are staged by the first maintenance).

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_READY = "state = 'pending' AND delayed_until IS NULL"
_DELAYED = "state = 'pending' AND delayed_until IS NOT NULL"
_PLACEMENT: list[str | sa.TextClause] = ["pools", sa.text("priority DESC"), "id"]


def upgrade() -> None:
    op.add_column("jobs", sa.Column("delayed_until", sa.Float(precision=53), nullable=True))
    op.execute("UPDATE jobs SET delayed_until = run_after "
               "WHERE state IN ('pending', 'waiting') AND run_after IS NOT NULL")
    op.drop_index("ix_jobs_pending_pools", table_name="jobs")
    op.create_index("ix_jobs_pending_pools", "jobs", _PLACEMENT,
                    sqlite_where=sa.text(_READY), postgresql_where=sa.text(_READY))
    op.create_index("ix_jobs_delayed", "jobs", ["delayed_until"],
                    sqlite_where=sa.text(_DELAYED), postgresql_where=sa.text(_DELAYED))


def downgrade() -> None:
    op.drop_index("ix_jobs_delayed", table_name="jobs")
    op.drop_index("ix_jobs_pending_pools", table_name="jobs")
    op.create_index("ix_jobs_pending_pools", "jobs", _PLACEMENT,
                    sqlite_where=sa.text("state = 'pending'"),
                    postgresql_where=sa.text("state = 'pending'"))
    op.drop_column("jobs", "delayed_until")
