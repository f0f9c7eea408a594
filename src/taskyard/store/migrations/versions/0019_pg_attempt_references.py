"""PostgreSQL: the references of attempts checked once per statement.

The foreign keys ``attempts.job_id`` (``ON DELETE CASCADE``) and ``attempts.worker_id``
give way to statement-level triggers that keep the same rules (see
:mod:`taskyard.store.postgresql.references`): a job deleted takes its attempts, an
attempt names a job and a worker that exist, a worker that attempts name is not
deleted. The dispatch, which checks its attempts itself under the cycle's lock, skips
them: two per-row checks per dispatched job. SQLite keeps its foreign keys.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import op

from taskyard.store.postgresql import references as pg_references

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# (constraint, column, referred table, on delete)
_FOREIGN_KEYS = (
    ("fk_attempts_job_id_jobs", "job_id", "jobs", "CASCADE"),
    ("fk_attempts_worker_id_workers", "worker_id", "workers", None),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, *_ in _FOREIGN_KEYS:
        op.drop_constraint(name, "attempts", type_="foreignkey")
    for statement in pg_references.attempt_statements():
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in [*pg_references.attempt_drop_statements(),
                      pg_references.jobs_gone_without_attempts()]:
        op.execute(statement)
    for name, column, referent, ondelete in _FOREIGN_KEYS:
        op.create_foreign_key(name, "attempts", referent, [column], ["id"], ondelete=ondelete)
