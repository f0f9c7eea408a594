"""Approvals, waits and sleeps: ``jobs.kind`` (with ``type`` NULL for them), the signal
a wait waits for, the state ``awaiting`` (its timer index and its signal index), and
``signals``, every signal sent.

SQLite cannot alter a column or a constraint in place, and rebuilding ``jobs`` would
cascade the deletes of its old copy to attempts, stages and edges (foreign keys are
on). The change only drops a NOT NULL and widens or adds CHECKs that every existing row
passes, which SQLite documents as safe to make by editing the table's schema text
(https://sqlite.org/lang_altertable.html#otheralter): done so, with the schema version
bumped so that open connections reload it.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_STATES_BEFORE = ("canceled", "dependency_failed", "dispatched", "error", "failed", "pending",
                  "running", "skipped", "succeeded", "suspended", "waiting")
_STATES_AFTER = tuple(sorted((*_STATES_BEFORE, "awaiting")))
_KINDS = "'approval', 'sleep', 'task', 'wait'"
_CHECKS = {"kind_known": f"kind IN ({_KINDS})",
           "type_iff_task": "(kind = 'task') = (type IS NOT NULL)"}
_AWAITING = "state = 'awaiting'"


def _states(states: tuple[str, ...]) -> str:
    return f"state IN ({', '.join(repr(s) for s in states)})"


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column("jobs", sa.Column("kind", sa.String(10), nullable=False,
                                    server_default="task"))
    op.add_column("jobs", sa.Column("signal_name", sa.String(200), nullable=True))
    op.add_column("jobs", sa.Column("signal_key", sa.String(400), nullable=True))
    op.add_column("jobs", sa.Column("signals_after", sa.Float(precision=53), nullable=True))
    if bind.dialect.name == "sqlite":
        _edit_sqlite_jobs(_STATES_BEFORE, _STATES_AFTER, relax=True)
    else:
        op.alter_column("jobs", "type", existing_type=sa.String(200), nullable=True)
        op.drop_constraint(op.f("ck_jobs_state_known"), "jobs", type_="check")
        op.create_check_constraint(op.f("ck_jobs_state_known"), "jobs", _states(_STATES_AFTER))
        for name, condition in _CHECKS.items():
            op.create_check_constraint(op.f(f"ck_jobs_{name}"), "jobs", condition)
    op.create_index("ix_jobs_awaiting_deadline", "jobs", ["deadline"],
                    sqlite_where=sa.text(_AWAITING), postgresql_where=sa.text(_AWAITING))
    op.create_index("ix_jobs_awaiting_signal", "jobs", ["signal_name", "signal_key"],
                    sqlite_where=sa.text(_AWAITING), postgresql_where=sa.text(_AWAITING))
    id_type = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "signals",
        sa.Column("id", id_type, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("key", sa.String(400), nullable=True),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column("sent_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_signals")),
    )
    op.create_index("ix_signals_name_created_at", "signals", ["name", "created_at"])
    op.create_index("ix_signals_name_key_created_at", "signals", ["name", "key", "created_at"])


def downgrade() -> None:
    bind = op.get_bind()
    left = bind.execute(sa.text(
        "SELECT COUNT(*) FROM jobs WHERE kind <> 'task' OR state = 'awaiting'")).scalar()
    if left:
        raise RuntimeError(f"{left} approval, wait or sleep jobs exist: delete them (taskyard "
                           "prune) before going back to a taskyard without them")
    op.drop_table("signals")
    op.drop_index("ix_jobs_awaiting_signal", table_name="jobs")
    op.drop_index("ix_jobs_awaiting_deadline", table_name="jobs")
    if bind.dialect.name == "sqlite":
        _edit_sqlite_jobs(_STATES_AFTER, _STATES_BEFORE, relax=False)
    else:
        for name in _CHECKS:
            op.drop_constraint(op.f(f"ck_jobs_{name}"), "jobs", type_="check")
        op.drop_constraint(op.f("ck_jobs_state_known"), "jobs", type_="check")
        op.create_check_constraint(op.f("ck_jobs_state_known"), "jobs", _states(_STATES_BEFORE))
        op.alter_column("jobs", "type", existing_type=sa.String(200), nullable=False)
    for column in ("signals_after", "signal_key", "signal_name", "kind"):
        op.drop_column("jobs", column)


def _edit_sqlite_jobs(old: tuple[str, ...], new: tuple[str, ...], *, relax: bool) -> None:
    """Edit ``jobs``' schema text: ``type`` nullable (``relax``) or not, the states of
    ``ck_jobs_state_known`` from ``old`` to ``new``, the checks of :data:`_CHECKS` added
    (``relax``) or removed. Every row passes the result (a downgrade first made sure)."""
    bind = op.get_bind()
    sql = bind.execute(sa.text(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'")).scalar_one()
    edits = [(re.escape(f"CHECK ({_states(old)})"), f"CHECK ({_states(new)})")]
    if relax:
        edits.append((r"\btype VARCHAR\(200\) NOT NULL", "type VARCHAR(200)"))
        added = "".join(f", \n\tCONSTRAINT ck_jobs_{name} CHECK ({condition})"
                        for name, condition in _CHECKS.items())
        edits.append((r"\s*\)\s*$", f"{added}\n)"))
    else:
        edits.append((r"\btype VARCHAR\(200\)(?! NOT NULL)", "type VARCHAR(200) NOT NULL"))
        edits.extend((rf",\s*CONSTRAINT ck_jobs_{name} CHECK \({re.escape(condition)}\)", "")
                     for name, condition in _CHECKS.items())
    for pattern, replacement in edits:
        sql, count = re.subn(pattern, replacement.replace("\\", "\\\\"), sql, count=1)
        if count != 1:
            raise RuntimeError(f"jobs' schema text is not as expected ({pattern!r})")
    version = bind.execute(sa.text("PRAGMA schema_version")).scalar_one()
    bind.execute(sa.text("PRAGMA writable_schema = ON"))
    bind.execute(sa.text("UPDATE sqlite_master SET sql = :sql "
                         "WHERE type = 'table' AND name = 'jobs'"), {"sql": sql})
    bind.execute(sa.text(f"PRAGMA schema_version = {int(version) + 1}"))
    bind.execute(sa.text("PRAGMA writable_schema = OFF"))
    problems = bind.execute(sa.text("PRAGMA integrity_check")).scalars().all()
    if problems != ["ok"]:
        raise RuntimeError(f"jobs' schema edit left the database inconsistent: {problems}")
