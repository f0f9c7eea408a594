"""Tokens may expire: ``api_tokens.expires_at`` (database clock, epoch seconds; NULL:
never). ``taskyard token create --expires 30d`` and ``POST /api/v1/tokens`` with
``expires`` set it; after it, the token is refused (401) like a revoked one.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_TIME = sa.Float(precision=53)


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("expires_at", _TIME, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("expires_at")
