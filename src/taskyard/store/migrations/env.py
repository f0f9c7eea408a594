"""Alembic environment: taskyard runs migrations programmatically (see migrate.py)."""

from __future__ import annotations

from alembic import context

from taskyard.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":
        # Two processes running `taskyard init` at once migrate one after the other.
        connection.exec_driver_sql("SELECT pg_advisory_xact_lock(7461736479617264)")
    context.run_migrations()
