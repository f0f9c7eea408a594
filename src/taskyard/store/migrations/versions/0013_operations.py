"""What operators read and act from (issue 41): jobs search by label and in the order
they ended (``store/reads/job_search.py``).

Revision ID: 0013
Revises: 0011
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0011"
branch_labels = None
depends_on = None


def _partial(predicate: str) -> dict[str, Any]:
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


def upgrade() -> None:
    op.create_index("ix_jobs_label_id", "jobs", ["label", "id"],
                    **_partial("label IS NOT NULL"))
    op.create_index("ix_jobs_finished_id", "jobs", ["finished_at", "id"],
                    **_partial("finished_at IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("ix_jobs_finished_id", "jobs")
    op.drop_index("ix_jobs_label_id", "jobs")
