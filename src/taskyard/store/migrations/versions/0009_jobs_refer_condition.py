"""PostgreSQL: the jobs insert trigger (pg_references) is not called for a statement
that checked its references itself (a one-job submit in autocommit: pg_submit).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import op

from taskyard.store.postgresql import references as pg_references

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_references.jobs_refer_statements(checked_when=True):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_references.jobs_refer_statements(checked_when=False):
        op.execute(statement)
