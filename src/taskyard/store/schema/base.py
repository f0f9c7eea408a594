"""What every table of :mod:`taskyard.store.schema` shares: the metadata and its naming
convention, PostgreSQL's reference checks, the id and time types, and partial-index
predicates for both backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import DDL, BigInteger, Float, Integer, MetaData, event, text

from taskyard.store.postgresql import references as pg_references

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# PostgreSQL's per-statement reference checks (see pg_references), created with the
# tables by ``metadata.create_all`` as migrations 0004 and 0019 create them.
for _event, _statements in (("after_create", pg_references.all_statements()),
                            ("before_drop", pg_references.all_drop_statements())):
    for _statement in _statements:
        event.listen(metadata, _event,
                     DDL(_statement).execute_if(dialect="postgresql"))  # type: ignore[no-untyped-call]

READY = "state = 'pending' AND delayed_until IS NULL"
"""SQL: pending and not delayed to a time: the jobs of the placement index
(``ix_jobs_pending_pools``, migration 0020), which the cycle reads."""
DELAYED = "state = 'pending' AND delayed_until IS NOT NULL"
"""SQL: pending and delayed to a time (``ix_jobs_delayed``)."""

# SQLite only aliases the rowid (fast inserts, monotonic ids) for INTEGER PRIMARY KEY.
Id = BigInteger().with_variant(Integer(), "sqlite")
Time = Float(precision=53)


def partial_index(sqlite: str, *, postgresql: str | None = None) -> dict[str, Any]:
    """A partial index's predicate: SQLite's now, PostgreSQL's (the same text unless
    given) once a PostgreSQL store opens (:func:`add_postgresql_predicates`). Declaring
    it here at once would load SQLAlchemy's PostgreSQL dialect in every process, about
    a tenth of a SQLite ``taskyard submit``."""
    return {"sqlite_where": text(sqlite), "info": {"postgresql_where": postgresql or sqlite}}


def add_postgresql_predicates() -> None:
    """Give the partial indexes their PostgreSQL predicates (idempotent); the PostgreSQL
    dialect calls it before anything creates or compares the schema."""
    for table in metadata.tables.values():
        for index in table.indexes:
            where = index.info.get("postgresql_where")
            options = index.dialect_options["postgresql"]
            if where is not None and options["where"] is None:
                options["where"] = text(where)
