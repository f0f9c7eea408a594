"""Tables of the taskyard database (SQLAlchemy Core).

Times are stored as UTC epoch seconds (double precision) so that the same
comparisons run on SQLite and PostgreSQL and the database clock can be used
directly (see :mod:`taskyard.store.clock`). Ids are integers from sequences:
the id order of jobs is their creation order.

The Alembic migrations in ``migrations/versions`` create exactly these
tables; a test checks that a migrated schema equals ``metadata.create_all``.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    event,
    text,
)

from taskyard.core.states import ACTIVE, TERMINAL, AttemptState, JobState
from taskyard.core.waits import Kind
from taskyard.store.schema.base import DELAYED, READY, Id, Time, add_postgresql_predicates, metadata
from taskyard.store.schema.base import partial_index as _partial
from taskyard.store.schema.checks import checks, one_of, quoted
from taskyard.store.schema.operations import duration_totals, history, log_chunks
from taskyard.store.schema.services import (
    api_tokens,
    outbox_cursors,
    rate_starts,
    scheduler_state,
    wakeups,
    worker_gate,
)
from taskyard.store.schema.signals import signals

__all__ = [
    "EVENT_TX_DEFAULT",
    "Id",
    "Time",
    "add_postgresql_predicates",
    "api_tokens",
    "attempts",
    "dependencies",
    "duration_totals",
    "events",
    "graphs",
    "history",
    "jobs",
    "log_chunks",
    "metadata",
    "outbox_cursors",
    "pools",
    "rate_starts",
    "scheduler_state",
    "schedules",
    "signals",
    "stages",
    "task_types",
    "wakeups",
    "worker_gate",
    "workers",
]


_ACTIVE_SQL = quoted(ACTIVE)

task_types = Table(
    "task_types",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("handler", Text, nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("pools", Text, nullable=False, server_default='["default"]'),
    Column("cost", Integer, nullable=False, server_default="1"),
    Column("timeout", Time),
    Column("retries", Integer, nullable=False, server_default="0"),
    Column("retry_delay", Time, nullable=False, server_default="0"),
    Column("retry_backoff", Time, nullable=False, server_default="1"),
    Column("retry_max_delay", Time, nullable=False, server_default="3600"),
    Column("interval_default", Time),
    Column("interval_min", Time),
    Column("interval_max", Time),
    Column("backoff_factor", Time),
    Column("max_queue_length", Integer),
    Column("locks", Text, nullable=False, server_default="[]"),
    Column("simultaneous", Boolean, nullable=False, server_default=text("true")),
    Column("prerequisites", Text, nullable=False, server_default="[]"),
    Column("created_at", Time, nullable=False),
    Column("updated_at", Time, nullable=False),
    # Added by migration 0002 (hence last): times a job may lose its worker.
    Column("max_worker_losses", Integer, nullable=False, server_default="3"),
    # Added by migration 0007: at most N starts per window (``10/s``), per rendered key.
    Column("rate_limit", String(40)), Column("rate_key", Text),
    CheckConstraint("cost >= 0", name="cost_nonnegative"),
    CheckConstraint("retries >= 0", name="retries_nonnegative"),
    CheckConstraint("max_queue_length IS NULL OR max_queue_length > 0", name="queue_positive"),
)

pools = Table(
    "pools",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("description", Text, nullable=False, server_default=""),
    Column("created_at", Time, nullable=False),
    # Added by migration 0015: nothing new is placed in a paused pool (``pools pause``).
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    Column("paused_at", Time),
)

workers = Table(
    "workers",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("hostname", String(255), nullable=False, server_default=""),
    Column("pid", Integer),
    Column("pools", Text, nullable=False),
    Column("capacity", Integer, nullable=False),
    Column("state", String(20), nullable=False, server_default="active"),
    Column("lease_expires_at", Time, nullable=False),
    Column("started_at", Time, nullable=False),
    Column("last_heartbeat_at", Time, nullable=False),
    Column("stopped_at", Time),
    # Added by migration 0003: jobs the cycle may place beyond capacity (queued at the worker).
    Column("prefetch", Integer, nullable=False, server_default="0"),
    # Migration 0018: the most it queues until it declares a window (core/prefetch.py).
    Column("unpaced_prefetch", Integer),
    CheckConstraint("capacity >= 0", name="capacity_nonnegative"),
    CheckConstraint("state IN ('active', 'stopped', 'expelled')", name="state_known"),
    # Only one live worker per name; stopped/expelled rows stay for history.
    Index("uq_workers_live_name", "name", unique=True, **_partial("state = 'active'")),
    Index("ix_workers_active_lease", "lease_expires_at", **_partial("state = 'active'")),
)

graphs = Table(
    "graphs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("state", String(20), nullable=False, server_default="running"),
    Column("routing", String(200), nullable=False, server_default=""),
    Column("created_at", Time, nullable=False),
    Column("finished_at", Time),
    Column("last_progress_at", Time, nullable=False),
    Column("stalled_at", Time),
    Column("jobs_total", Integer, nullable=False, server_default="0"),
    Column("jobs_done", Integer, nullable=False, server_default="0"),
    CheckConstraint(
        "state IN ('running', 'blocked', 'finished', 'canceled')", name="state_known"
    ),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    # NULL for an approval, a wait or a sleep (migration 0013): they run no task type.
    Column("type", String(200)),
    Column("args", Text, nullable=False, server_default="{}"),
    Column("state", String(20), nullable=False),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("pools", Text, nullable=False),
    Column("cost", Integer, nullable=False, server_default="1"),
    Column("locks", Text, nullable=False, server_default="[]"),
    Column("attempt", Integer, nullable=False, server_default="0"),
    Column("retries", Integer, nullable=False, server_default="0"),
    Column("retry_delay", Time, nullable=False, server_default="0"),
    Column("retry_backoff", Time, nullable=False, server_default="1"),
    Column("retry_max_delay", Time, nullable=False, server_default="3600"),
    Column("timeout", Time),
    Column("worker_losses", Integer, nullable=False, server_default="0"),
    Column("unmet_deps", Integer, nullable=False, server_default="0"),
    # Parent edges that can no longer hold because a parent failed (vs. was skipped):
    # decides dependency_failed vs skipped for convergence 'any' (see core.edges).
    Column("dep_failures", Integer, nullable=False, server_default="0"),
    Column("convergence", String(3), nullable=False, server_default="all"),
    Column("definition_hash", String(64)),
    Column("run_after", Time),
    Column("worker_id", Id, ForeignKey("workers.id")),
    Column("deadline", Time),
    Column("cancel_requested", Boolean, nullable=False, server_default=text("false")),
    Column("graph_id", Id),
    Column("label", String(200)),
    Column("routing", String(200), nullable=False, server_default=""),
    Column("launch_type", String(20), nullable=False, server_default="manual"),
    Column("schedule_name", String(200)),
    Column("dedup_key", String(400)),
    Column("created_at", Time, nullable=False),
    Column("started_at", Time),
    Column("finished_at", Time),
    Column("result", Text),
    Column("exit_code", Integer),
    Column("error", Text),
    # Added by migration 0002: the loss budget copied from the type, and the priority
    # the job was submitted with once aging has raised ``priority`` (NULL: not aged).
    Column("max_worker_losses", Integer, nullable=False, server_default="3"),
    Column("base_priority", Integer),
    # Added by migration 0007: the key a unique submit holds (per type); the rate-limit
    # key rendered from the args when the type has a template.
    Column("unique_key", String(400)), Column("rate_key", Text),
    # Added by migration 0013: what the job is (core/waits.py:Kind); the signal a wait
    # waits for (its key: NULL for any); signals sent from this time on complete it
    # (NULL: from its creation; a retry moves it). ``timeout`` is an approval's or a
    # wait's timeout, a sleep's duration, and ``deadline`` when an awaiting one ends.
    Column("kind", String(10), nullable=False, server_default=Kind.TASK.value),
    Column("signal_name", String(200)), Column("signal_key", String(400)),
    Column("signals_after", Time),
    # Migration 0014: the tick a schedule's job stands for, as TASKYARD_LOGICAL_TIME.
    Column("logical_time", Time),
    # Migration 0017: the W3C trace context at submit (core/trace_context.py), or NULL.
    Column("trace_context", Text),
    Column("delayed_until", Time),  # migration 0020: see the placement index below
    # Foreign keys on SQLite; on PostgreSQL the same rules, checked per statement
    # (migration 0004, see pg_references): a per-row check dominated large submits.
    ForeignKeyConstraint(["type"], ["task_types.name"]).ddl_if(dialect="sqlite"),
    ForeignKeyConstraint(["graph_id"], ["graphs.id"]).ddl_if(dialect="sqlite"),
    # Each in its backend's form: one array constant on PostgreSQL (schema/checks.py).
    *checks("state_known", "{}", one_of("state", JobState)),
    *checks("worker_iff_active", "({}) = (worker_id IS NOT NULL)", one_of("state", ACTIVE)),
    *checks("finished_at_set", "{} OR finished_at IS NOT NULL",
            one_of("state", TERMINAL, negate=True)),
    CheckConstraint("unmet_deps >= 0", name="unmet_nonnegative"),
    CheckConstraint("cost >= 0 AND attempt >= 0", name="counts_nonnegative"),
    *checks("convergence_known", "{}", one_of("convergence", ("all", "any"))),
    *checks("kind_known", "{}", one_of("kind", Kind)),
    CheckConstraint("(kind = 'task') = (type IS NOT NULL)", name="type_iff_task"),
    # The placement index (migration 0003): per list of pools, pending jobs in
    # placement order. The cycle reads each list whose pools have room, bounded, and
    # merges them: its cost follows the work placed, not the backlog, and jobs for an
    # idle pool are never stuck behind a backlog for a busy one.
    # Jobs delayed to a time (a run_after ahead, a retry's delay: ``delayed_until`` set,
    # migration 0020) wait by time in ix_jobs_delayed instead: a backlog of jobs for later
    # cost each cycle a walk past all of it (tests/store/test_delayed_jobs.py); the
    # maintenance clears ``delayed_until`` of the due ones (portable/cycle.py).
    Index(
        "ix_jobs_pending_pools",
        "pools",
        text("priority DESC"),
        "id",
        **_partial(READY),
    ),
    Index("ix_jobs_delayed", "delayed_until", **_partial(DELAYED)),
    Index("ix_jobs_active_worker", "worker_id", **_partial(f"state IN ({_ACTIVE_SQL})")),
    Index("ix_jobs_suspended", "id", **_partial("state = 'suspended'")),
    Index("ix_jobs_type_state_id", "type", "state", "id"),
    Index("ix_jobs_state_id", "state", "id"),
    # Partial (migration 0003): most jobs have no graph, dedup key or schedule, and an
    # index a row is not in costs nothing when the row changes state.
    Index("ix_jobs_graph_label", "graph_id", "label", **_partial("graph_id IS NOT NULL")),
    Index("uq_jobs_dedup_key", "dedup_key", unique=True, **_partial("dedup_key IS NOT NULL")),
    # A unique submit looks for a live or recent job with its key (migration 0007).
    Index("ix_jobs_type_unique_key", "type", "unique_key", "id",
          **_partial("unique_key IS NOT NULL")),
    Index("ix_jobs_schedule", "schedule_name", "id", **_partial("schedule_name IS NOT NULL")),
    # Prerequisite reuse looks up recent successes of a type within a cache window.
    Index("ix_jobs_type_succeeded", "type", "finished_at", **_partial("state = 'succeeded'")),
    # Awaiting jobs (migration 0013): the timer index the cycle reads the due ones
    # through (their number costs it nothing), and the waits a signal completes.
    Index("ix_jobs_awaiting_deadline", "deadline", **_partial("state = 'awaiting'")),
    Index("ix_jobs_awaiting_signal", "signal_name", "signal_key",
          **_partial("state = 'awaiting'")),
    # Added by migration 0016 (store/reads/job_search.py): search by label, and jobs in
    # the order they ended (search, retention). Partial: a job enters them only if it
    # has a label, and once it has ended.
    Index("ix_jobs_label_id", "label", "id", **_partial("label IS NOT NULL")),
    Index("ix_jobs_finished_id", "finished_at", "id", **_partial("finished_at IS NOT NULL")),
)

attempts = Table(
    "attempts",
    metadata,
    Column("job_id", Id, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("worker_id", Id),
    Column("worker_name", String(200)),
    Column("state", String(20), nullable=False),
    Column("dispatched_at", Time, nullable=False),
    Column("started_at", Time),
    Column("finished_at", Time),
    Column("exit_code", Integer),
    Column("result", Text),
    Column("error", Text),
    Column("stdout_tail", Text),
    Column("stderr_tail", Text),
    PrimaryKeyConstraint("job_id", "attempt"),
    # PostgreSQL: statement-level triggers instead (migration 0019, see pg_references).
    ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE").ddl_if(dialect="sqlite"),
    ForeignKeyConstraint(["worker_id"], ["workers.id"]).ddl_if(dialect="sqlite"),
    *checks("state_known", "{}", one_of("state", AttemptState)),
)

stages = Table(
    "stages",
    metadata,
    Column("job_id", Id, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("name", String(200), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("state", String(20), nullable=False),
    Column("started_at", Time, nullable=False),
    Column("finished_at", Time),
    Column("result", Text),
    PrimaryKeyConstraint("job_id", "attempt", "name"),
    CheckConstraint("state IN ('running', 'succeeded', 'failed')", name="state_known"),
)

dependencies = Table(
    "dependencies",
    metadata,
    Column("job_id", Id, nullable=False),
    Column("requires_id", Id, nullable=False),
    Column("condition", String(20), nullable=False, server_default="success"),
    Column("satisfied", Boolean),
    PrimaryKeyConstraint("job_id", "requires_id"),
    # As for jobs.type: foreign keys on SQLite, per-statement checks on PostgreSQL.
    ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE").ddl_if(dialect="sqlite"),
    ForeignKeyConstraint(["requires_id"], ["jobs.id"], ondelete="CASCADE")
    .ddl_if(dialect="sqlite"),
    CheckConstraint("condition IN ('success', 'failure', 'always')", name="condition_known"),
    CheckConstraint("job_id <> requires_id", name="not_self"),
    # Completion finds dependents through this index: O(dependents), no scan.
    Index("ix_dependencies_requires_id", "requires_id"),
)

schedules = Table(
    "schedules",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("type", String(200), ForeignKey("task_types.name"), nullable=False),
    Column("args", Text, nullable=False, server_default="{}"),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("every", Time),
    Column("cron", String(200)),
    Column("timezone", String(100), nullable=False, server_default="UTC"),
    Column("current_interval", Time),
    Column("next_run", Time, nullable=False),
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    Column("catchup", String(20), nullable=False, server_default="one"),
    Column("last_job_id", Id),
    Column("last_run_at", Time),
    Column("last_outcome", String(40)),
    Column("created_at", Time, nullable=False),
    Column("updated_at", Time, nullable=False),
    # Migration 0014: missed ticks older than the window are dropped; core/ticks.py:Overlap.
    Column("catchup_window", Time),
    Column("overlap", String(20), nullable=False, server_default="allow"),
    CheckConstraint("every IS NULL OR cron IS NULL", name="every_xor_cron"),
    Index(
        "ix_schedules_due",
        "next_run",
        **_partial("paused = 0", postgresql="paused = false"),
    ),
)

events = Table(
    "events",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("topic", String(60), nullable=False),
    Column("routing_key", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("job_id", Id),
    Column("graph_id", Id),
    Column("created_at", Time, nullable=False),
    # Added by migration 0005. PostgreSQL: the writing transaction's id (a default, see
    # EVENT_TX_DEFAULT). Ids are taken at insert, not at commit, so a reader that went
    # by id alone could pass an event whose transaction commits later: readers go by
    # (tx_id, id), up to the oldest transaction still running. SQLite commits one
    # writer at a time, in id order: NULL there.
    Column("tx_id", BigInteger),
    Index("ix_events_job_id", "job_id"),
    Index("ix_events_tx_id", "tx_id", "id").ddl_if(dialect="postgresql"),
)

EVENT_TX_DEFAULT = ("ALTER TABLE events ALTER COLUMN tx_id "
                    "SET DEFAULT (pg_current_xact_id()::text::bigint)")
"""PostgreSQL: an event row records the transaction that wrote it."""
event.listen(events, "after_create",
             DDL(EVENT_TX_DEFAULT).execute_if(dialect="postgresql"))  # type: ignore[no-untyped-call]
