"""PostgreSQL: the references of jobs and edges checked once per statement.

The foreign keys ``jobs.type``, ``jobs.graph_id``, ``dependencies.job_id`` and
``dependencies.requires_id`` give way to statement-level triggers that keep the same
rules (see :mod:`taskyard.store.pg_references`): a per-row check made most of the time
of a large graph submit. SQLite keeps its foreign keys; nothing changes there.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

from taskyard.store.postgresql import references as pg_references

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# (constraint, table, column, referred table.column, on delete)
_FOREIGN_KEYS = (
    ("fk_jobs_type_task_types", "jobs", "type", "task_types.name", None),
    ("fk_jobs_graph_id_graphs", "jobs", "graph_id", "graphs.id", None),
    ("fk_dependencies_job_id_jobs", "dependencies", "job_id", "jobs.id", "CASCADE"),
    ("fk_dependencies_requires_id_jobs", "dependencies", "requires_id", "jobs.id", "CASCADE"),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, table, *_ in _FOREIGN_KEYS:
        op.drop_constraint(name, table, type_="foreignkey")
    for statement in pg_references.create_statements(checked_when=False):  # 0009 adds it
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_references.drop_statements():
        op.execute(statement)
    for name, table, column, referred, ondelete in _FOREIGN_KEYS:
        referent, remote = referred.split(".")
        op.create_foreign_key(name, table, referent, [column], [remote], ondelete=ondelete)
