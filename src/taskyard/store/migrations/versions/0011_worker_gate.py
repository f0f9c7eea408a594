"""The worker gate: an empty table whose lock orders a worker's registration against
the submits that decided, on PostgreSQL, that no worker was live (see
``schema_service.worker_gate``).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("worker_gate", sa.Column("id", sa.Integer(), primary_key=True))


def downgrade() -> None:
    op.drop_table("worker_gate")
