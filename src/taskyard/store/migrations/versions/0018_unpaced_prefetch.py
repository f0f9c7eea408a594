"""Provisional prefetch windows (issue 39): ``workers.unpaced_prefetch``, the most a
worker accepts queued while it has declared no window of its own (it has run no job, so
it knows no pace): placement lends it its pools' windows meanwhile
(``core/prefetch.py:provisional_windows``). NULL once it declared one, and for workers
registered before this revision (they are placed as before).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("workers", sa.Column("unpaced_prefetch", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("workers", "unpaced_prefetch")
