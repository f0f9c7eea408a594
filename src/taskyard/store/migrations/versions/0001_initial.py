"""Initial schema: task types, pools, workers, graphs, jobs, attempts, stages,
dependencies, schedules, events and the scheduler's state row.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("topic", sa.String(length=60), nullable=False),
        sa.Column("routing_key", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("graph_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index("ix_events_job_id", "events", ["job_id"], unique=False)
    op.create_table(
        "graphs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("state", sa.String(length=20), server_default="running", nullable=False),
        sa.Column("routing", sa.String(length=200), server_default="", nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.Column("finished_at", sa.Float(precision=53), nullable=True),
        sa.Column("last_progress_at", sa.Float(precision=53), nullable=False),
        sa.Column("stalled_at", sa.Float(precision=53), nullable=True),
        sa.Column("jobs_total", sa.Integer(), server_default="0", nullable=False),
        sa.Column("jobs_done", sa.Integer(), server_default="0", nullable=False),
        sa.CheckConstraint(
            "state IN ('running', 'blocked', 'finished', 'canceled')",
            name=op.f("ck_graphs_state_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_graphs")),
    )
    op.create_table(
        "pools",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_pools")),
    )
    op.create_table(
        "scheduler_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cycles", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=True),
        sa.Column("last_cycle_started_at", sa.Float(precision=53), nullable=True),
        sa.Column("last_cycle_finished_at", sa.Float(precision=53), nullable=True),
        sa.CheckConstraint("id = 1", name=op.f("ck_scheduler_state_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduler_state")),
    )
    op.create_table(
        "task_types",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("handler", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("pools", sa.Text(), server_default='["default"]', nullable=False),
        sa.Column("cost", sa.Integer(), server_default="1", nullable=False),
        sa.Column("timeout", sa.Float(precision=53), nullable=True),
        sa.Column("retries", sa.Integer(), server_default="0", nullable=False),
        sa.Column("retry_delay", sa.Float(precision=53), server_default="0", nullable=False),
        sa.Column("retry_backoff", sa.Float(precision=53), server_default="1", nullable=False),
        sa.Column("retry_max_delay", sa.Float(precision=53), server_default="3600", nullable=False),
        sa.Column("interval_default", sa.Float(precision=53), nullable=True),
        sa.Column("interval_min", sa.Float(precision=53), nullable=True),
        sa.Column("interval_max", sa.Float(precision=53), nullable=True),
        sa.Column("backoff_factor", sa.Float(precision=53), nullable=True),
        sa.Column("max_queue_length", sa.Integer(), nullable=True),
        sa.Column("locks", sa.Text(), server_default="[]", nullable=False),
        sa.Column("simultaneous", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("prerequisites", sa.Text(), server_default="[]", nullable=False),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.Column("updated_at", sa.Float(precision=53), nullable=False),
        sa.CheckConstraint("cost >= 0", name=op.f("ck_task_types_cost_nonnegative")),
        sa.CheckConstraint(
            "max_queue_length IS NULL OR max_queue_length > 0",
            name=op.f("ck_task_types_queue_positive"),
        ),
        sa.CheckConstraint("retries >= 0", name=op.f("ck_task_types_retries_nonnegative")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_task_types")),
    )
    op.create_table(
        "workers",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("hostname", sa.String(length=255), server_default="", nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("pools", sa.Text(), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), server_default="active", nullable=False),
        sa.Column("lease_expires_at", sa.Float(precision=53), nullable=False),
        sa.Column("started_at", sa.Float(precision=53), nullable=False),
        sa.Column("last_heartbeat_at", sa.Float(precision=53), nullable=False),
        sa.Column("stopped_at", sa.Float(precision=53), nullable=True),
        sa.CheckConstraint(
            "state IN ('active', 'stopped', 'expelled')", name=op.f("ck_workers_state_known")
        ),
        sa.CheckConstraint("capacity >= 0", name=op.f("ck_workers_capacity_nonnegative")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
    )
    op.create_index(
        "ix_workers_active_lease",
        "workers",
        ["lease_expires_at"],
        unique=False,
        sqlite_where=sa.text("state = 'active'"),
        postgresql_where=sa.text("state = 'active'"),
    )
    op.create_index(
        "uq_workers_live_name",
        "workers",
        ["name"],
        unique=True,
        sqlite_where=sa.text("state = 'active'"),
        postgresql_where=sa.text("state = 'active'"),
    )
    op.create_table(
        "jobs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("type", sa.String(length=200), nullable=False),
        sa.Column("args", sa.Text(), server_default="{}", nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("priority", sa.Integer(), server_default="0", nullable=False),
        sa.Column("pools", sa.Text(), nullable=False),
        sa.Column("cost", sa.Integer(), server_default="1", nullable=False),
        sa.Column("locks", sa.Text(), server_default="[]", nullable=False),
        sa.Column("attempt", sa.Integer(), server_default="0", nullable=False),
        sa.Column("retries", sa.Integer(), server_default="0", nullable=False),
        sa.Column("retry_delay", sa.Float(precision=53), server_default="0", nullable=False),
        sa.Column("retry_backoff", sa.Float(precision=53), server_default="1", nullable=False),
        sa.Column("retry_max_delay", sa.Float(precision=53), server_default="3600", nullable=False),
        sa.Column("timeout", sa.Float(precision=53), nullable=True),
        sa.Column("worker_losses", sa.Integer(), server_default="0", nullable=False),
        sa.Column("unmet_deps", sa.Integer(), server_default="0", nullable=False),
        sa.Column("dep_failures", sa.Integer(), server_default="0", nullable=False),
        sa.Column("convergence", sa.String(length=3), server_default="all", nullable=False),
        sa.Column("definition_hash", sa.String(length=64), nullable=True),
        sa.Column("run_after", sa.Float(precision=53), nullable=True),
        sa.Column("worker_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("deadline", sa.Float(precision=53), nullable=True),
        sa.Column(
            "cancel_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column("graph_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("routing", sa.String(length=200), server_default="", nullable=False),
        sa.Column("launch_type", sa.String(length=20), server_default="manual", nullable=False),
        sa.Column("schedule_name", sa.String(length=200), nullable=True),
        sa.Column("dedup_key", sa.String(length=400), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.Column("started_at", sa.Float(precision=53), nullable=True),
        sa.Column("finished_at", sa.Float(precision=53), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "(state IN ('dispatched', 'running')) = (worker_id IS NOT NULL)",
            name=op.f("ck_jobs_worker_iff_active"),
        ),
        sa.CheckConstraint("convergence IN ('all', 'any')", name=op.f("ck_jobs_convergence_known")),
        sa.CheckConstraint(
            "state IN ('canceled', 'dependency_failed', 'dispatched', 'error', 'failed', 'pending', 'running', 'skipped', 'succeeded', 'suspended', 'waiting')",
            name=op.f("ck_jobs_state_known"),
        ),
        sa.CheckConstraint(
            "state NOT IN ('canceled', 'dependency_failed', 'error', 'failed', 'skipped', 'succeeded') OR finished_at IS NOT NULL",
            name=op.f("ck_jobs_finished_at_set"),
        ),
        sa.CheckConstraint("cost >= 0 AND attempt >= 0", name=op.f("ck_jobs_counts_nonnegative")),
        sa.CheckConstraint("unmet_deps >= 0", name=op.f("ck_jobs_unmet_nonnegative")),
        sa.ForeignKeyConstraint(["graph_id"], ["graphs.id"], name=op.f("fk_jobs_graph_id_graphs")),
        sa.ForeignKeyConstraint(
            ["type"], ["task_types.name"], name=op.f("fk_jobs_type_task_types")
        ),
        sa.ForeignKeyConstraint(
            ["worker_id"], ["workers.id"], name=op.f("fk_jobs_worker_id_workers")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index(
        "ix_jobs_active_worker",
        "jobs",
        ["worker_id"],
        unique=False,
        sqlite_where=sa.text("state IN ('dispatched', 'running')"),
        postgresql_where=sa.text("state IN ('dispatched', 'running')"),
    )
    op.create_index("ix_jobs_graph_label", "jobs", ["graph_id", "label"], unique=False)
    op.create_index(
        "ix_jobs_pending_order",
        "jobs",
        [sa.text("priority DESC"), "id"],
        unique=False,
        sqlite_where=sa.text("state = 'pending'"),
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_index("ix_jobs_schedule", "jobs", ["schedule_name", "id"], unique=False)
    op.create_index("ix_jobs_state_id", "jobs", ["state", "id"], unique=False)
    op.create_index(
        "ix_jobs_suspended",
        "jobs",
        ["id"],
        unique=False,
        sqlite_where=sa.text("state = 'suspended'"),
        postgresql_where=sa.text("state = 'suspended'"),
    )
    op.create_index("ix_jobs_type_state_id", "jobs", ["type", "state", "id"], unique=False)
    op.create_index(
        "ix_jobs_type_succeeded",
        "jobs",
        ["type", "finished_at"],
        unique=False,
        sqlite_where=sa.text("state = 'succeeded'"),
        postgresql_where=sa.text("state = 'succeeded'"),
    )
    op.create_index("uq_jobs_dedup_key", "jobs", ["dedup_key"], unique=True)
    op.create_table(
        "schedules",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=200), nullable=False),
        sa.Column("args", sa.Text(), server_default="{}", nullable=False),
        sa.Column("priority", sa.Integer(), server_default="0", nullable=False),
        sa.Column("every", sa.Float(precision=53), nullable=True),
        sa.Column("cron", sa.String(length=200), nullable=True),
        sa.Column("timezone", sa.String(length=100), server_default="UTC", nullable=False),
        sa.Column("current_interval", sa.Float(precision=53), nullable=True),
        sa.Column("next_run", sa.Float(precision=53), nullable=False),
        sa.Column("paused", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("catchup", sa.String(length=20), server_default="one", nullable=False),
        sa.Column(
            "last_job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("last_run_at", sa.Float(precision=53), nullable=True),
        sa.Column("last_outcome", sa.String(length=40), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.Column("updated_at", sa.Float(precision=53), nullable=False),
        sa.CheckConstraint(
            "every IS NULL OR cron IS NULL", name=op.f("ck_schedules_every_xor_cron")
        ),
        sa.ForeignKeyConstraint(
            ["type"], ["task_types.name"], name=op.f("fk_schedules_type_task_types")
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_schedules")),
    )
    op.create_index(
        "ix_schedules_due",
        "schedules",
        ["next_run"],
        unique=False,
        sqlite_where=sa.text("paused = 0"),
        postgresql_where=sa.text("paused = false"),
    )
    op.create_table(
        "attempts",
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("worker_name", sa.String(length=200), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("dispatched_at", sa.Float(precision=53), nullable=False),
        sa.Column("started_at", sa.Float(precision=53), nullable=True),
        sa.Column("finished_at", sa.Float(precision=53), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("stdout_tail", sa.Text(), nullable=True),
        sa.Column("stderr_tail", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "state IN ('canceled', 'dispatched', 'error', 'failed', 'lost', 'running', 'succeeded')",
            name=op.f("ck_attempts_state_known"),
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_attempts_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["worker_id"], ["workers.id"], name=op.f("fk_attempts_worker_id_workers")
        ),
        sa.PrimaryKeyConstraint("job_id", "attempt", name=op.f("pk_attempts")),
    )
    op.create_table(
        "dependencies",
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "requires_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("condition", sa.String(length=20), server_default="success", nullable=False),
        sa.Column("satisfied", sa.Boolean(), nullable=True),
        sa.CheckConstraint(
            "condition IN ('success', 'failure', 'always')",
            name=op.f("ck_dependencies_condition_known"),
        ),
        sa.CheckConstraint("job_id <> requires_id", name=op.f("ck_dependencies_not_self")),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_dependencies_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["requires_id"],
            ["jobs.id"],
            name=op.f("fk_dependencies_requires_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "requires_id", name=op.f("pk_dependencies")),
    )
    op.create_index("ix_dependencies_requires_id", "dependencies", ["requires_id"], unique=False)
    op.create_table(
        "stages",
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("started_at", sa.Float(precision=53), nullable=False),
        sa.Column("finished_at", sa.Float(precision=53), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "state IN ('running', 'succeeded', 'failed')", name=op.f("ck_stages_state_known")
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_stages_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "attempt", "name", name=op.f("pk_stages")),
    )
    op.execute("INSERT INTO scheduler_state (id, cycles) VALUES (1, 0)")


def downgrade() -> None:
    op.drop_table("stages")
    op.drop_index("ix_dependencies_requires_id", table_name="dependencies")
    op.drop_table("dependencies")
    op.drop_table("attempts")
    op.drop_index(
        "ix_schedules_due",
        table_name="schedules",
        sqlite_where=sa.text("paused = 0"),
        postgresql_where=sa.text("paused = false"),
    )
    op.drop_table("schedules")
    op.drop_index("uq_jobs_dedup_key", table_name="jobs")
    op.drop_index(
        "ix_jobs_type_succeeded",
        table_name="jobs",
        sqlite_where=sa.text("state = 'succeeded'"),
        postgresql_where=sa.text("state = 'succeeded'"),
    )
    op.drop_index("ix_jobs_type_state_id", table_name="jobs")
    op.drop_index(
        "ix_jobs_suspended",
        table_name="jobs",
        sqlite_where=sa.text("state = 'suspended'"),
        postgresql_where=sa.text("state = 'suspended'"),
    )
    op.drop_index("ix_jobs_state_id", table_name="jobs")
    op.drop_index("ix_jobs_schedule", table_name="jobs")
    op.drop_index("ix_jobs_pending_order", table_name="jobs")
    op.drop_index("ix_jobs_graph_label", table_name="jobs")
    op.drop_index(
        "ix_jobs_active_worker",
        table_name="jobs",
        sqlite_where=sa.text("state IN ('dispatched', 'running')"),
        postgresql_where=sa.text("state IN ('dispatched', 'running')"),
    )
    op.drop_table("jobs")
    op.drop_index(
        "uq_workers_live_name",
        table_name="workers",
        sqlite_where=sa.text("state = 'active'"),
        postgresql_where=sa.text("state = 'active'"),
    )
    op.drop_index(
        "ix_workers_active_lease",
        table_name="workers",
        sqlite_where=sa.text("state = 'active'"),
        postgresql_where=sa.text("state = 'active'"),
    )
    op.drop_table("workers")
    op.drop_table("task_types")
    op.drop_table("scheduler_state")
    op.drop_table("pools")
    op.drop_table("graphs")
    op.drop_index("ix_events_job_id", table_name="events")
    op.drop_table("events")
