"""What every table of :mod:`taskyard.store.schema` shares: the metadata and its naming
convention, the id and time types, and partial-index predicates for both backends."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Float, Integer, MetaData, text

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

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
