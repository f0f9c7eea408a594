"""OpenTelemetry (issue 41): ``jobs.trace_context``, the W3C trace context a job was
submitted in (``core/trace_context.py``); NULL when there was none.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("trace_context", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "trace_context")
