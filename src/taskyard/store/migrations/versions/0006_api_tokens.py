"""Bearer tokens of the HTTP API (``taskyard token create|list|revoke``).

Each row keeps a token's name, scope (``read``, ``write`` or ``admin``) and the SHA-256
of its secret, never the secret. A revoked token keeps its row (``revoked_at``) so that
``token list`` shows it; its name may then be given to a new token.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=10), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("revoked_at", _TIME, nullable=True),
        sa.Column("last_used_at", _TIME, nullable=True),
        sa.CheckConstraint("scope IN ('read', 'write', 'admin')",
                           name=op.f("ck_api_tokens_scope_known")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
    )
    op.create_index("uq_api_tokens_hash", "api_tokens", ["hash"], unique=True)
    op.create_index("uq_api_tokens_live_name", "api_tokens", ["name"], unique=True,
                    sqlite_where=sa.text("revoked_at IS NULL"),
                    postgresql_where=sa.text("revoked_at IS NULL"))


def downgrade() -> None:
    op.drop_index("uq_api_tokens_live_name", table_name="api_tokens")
    op.drop_index("uq_api_tokens_hash", table_name="api_tokens")
    op.drop_table("api_tokens")
