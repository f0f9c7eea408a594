"""Database failures turned into one line a user can act on.

``cli/main.py`` catches what the drivers and SQLAlchemy raise and prints
:func:`describe_database_error`'s line instead of a traceback: the server cannot
be reached, the SQLite file cannot be opened, or the schema is missing or older
than this taskyard (then the line says to run ``taskyard init``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from taskyard.model.errors import (
    DatabaseUrlError,
    NoDatabase,
    SchemaMissing,
    UnsupportedDatabase,
)
from taskyard.store.driver import normalize_url

CREATING_COMMANDS = frozenset({"init", "up"})
"""Commands that create a missing SQLite file (every other one needs it to exist)."""

# PostgreSQL SQLSTATE classes of failures to reach or enter the server: connection
# exception, invalid authorization, invalid catalog name, operator intervention.
_PG_CONNECTION_CLASSES = ("08", "28", "3D", "57")
# undefined_table, undefined_column, undefined_function, undefined_object.
_PG_MISSING_SCHEMA = ("42P01", "42703", "42883", "42704")
_SQLITE_MISSING_SCHEMA = ("no such table", "no such column", "has no column named")


def check_url(url: str, command: str | None) -> str:
    """``url`` if taskyard can open it for ``command``; else a specific error.

    A missing SQLite file is refused before SQLite creates an empty one, except for
    the commands that create the database (``init``, ``up``); for those the folder
    must exist.
    """
    try:
        normalize_url(url)
    except UnsupportedDatabase as exc:
        raise DatabaseUrlError(str(exc)) from None
    except ArgumentError:
        raise DatabaseUrlError(
            f"database URL {url!r} cannot be read; use sqlite:///FILE or "
            "postgresql://USER@HOST:PORT/DB"
        ) from None
    path = sqlite_path(url)
    if path is None:
        return url
    if command in CREATING_COMMANDS:
        if not path.parent.is_dir():
            raise NoDatabase(f"cannot create the SQLite database {path}: "
                             f"folder {path.parent} does not exist")
    elif not path.exists():
        raise NoDatabase(f"no taskyard database at {path}: run `taskyard init` first")
    return url


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///FILE`` URL; None for PostgreSQL, memory or URI forms."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database
    if not database or database == ":memory:" or parsed.query.get("uri") == "true":
        return None
    return Path(database)


def is_database_error(exc: BaseException) -> bool:
    """Raised by SQLAlchemy or a driver (the hot path runs on the driver's cursor), or
    such an error the store named as a missing schema."""
    if isinstance(exc, SQLAlchemyError | SchemaMissing) or _is_sqlite_error(exc, "Error"):
        return True
    module = type(exc).__module__
    return module == "psycopg" or module.startswith("psycopg.")


def describe_database_error(exc: BaseException, url: str) -> str:
    """One line saying what went wrong with the database and, when known, what to do."""
    if isinstance(exc, SchemaMissing):
        return str(exc)
    orig: BaseException = exc
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        orig = exc.orig
    where = display_url(url)
    detail = " ".join(str(orig).split()) or type(orig).__name__
    if _is_connection_failure(orig):
        return f"cannot connect to the database {where}: {detail}"
    if _is_missing_schema(orig):
        return _schema_advice(url, where) or f"database {where}: {detail}"
    path = sqlite_path(url)
    if _is_sqlite_error(orig, "Error") and path is not None and (
            "unable to open" in detail or "not a database" in detail):
        return f"cannot open the SQLite database {path}: {detail}"
    if isinstance(orig, SQLAlchemyError):
        # SQLAlchemy's own text adds the statement and a link: keep the first part.
        detail = " ".join(str(orig).split("[SQL:")[0].split("(Background on")[0].split())
    return f"database {where}: {detail}"


def schema_missing(exc: BaseException, url: str) -> SchemaMissing | None:
    """``exc`` as :class:`SchemaMissing` when it failed for want of taskyard's schema
    (none, or older than this taskyard's), else None (a missing table at the current
    revision is a bug to show as it is)."""
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    if not is_database_error(orig) or not _is_missing_schema(orig):
        return None
    advice = _schema_advice(url, display_url(url))
    return None if advice is None else SchemaMissing(advice)


def display_url(url: str) -> str:
    """The URL as shown to users: never a password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(url)


def _is_connection_failure(orig: BaseException) -> bool:
    if type(orig).__module__.partition(".")[0] != "psycopg":
        return False
    import psycopg  # noqa: PLC0415 - only PostgreSQL users have it loaded already

    if isinstance(orig, psycopg.InterfaceError):
        return True
    if not isinstance(orig, psycopg.OperationalError):
        return False
    # Errors raised while connecting carry no SQLSTATE (libpq reports them as text).
    state = orig.sqlstate
    return state is None or state[:2] in _PG_CONNECTION_CLASSES


def _is_sqlite_error(exc: BaseException, kind: str) -> bool:
    """Whether ``exc`` is ``sqlite3.<kind>``. Not imported here: a daemon on PostgreSQL
    never loads sqlite3 (~0.9 MiB resident each), and no sqlite3 error exists then."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3 is not None and isinstance(exc, getattr(sqlite3, kind))


def _is_missing_schema(orig: BaseException) -> bool:
    if _is_sqlite_error(orig, "OperationalError"):
        return any(marker in str(orig) for marker in _SQLITE_MISSING_SCHEMA)
    return getattr(orig, "sqlstate", None) in _PG_MISSING_SCHEMA


def _schema_advice(url: str, where: str) -> str | None:
    """Compare the database's schema revision with ours; None when they agree (the
    error then is not about the schema) or the revision cannot be read."""
    # Imported here: Alembic is slow to import and only this failure needs it.
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    from taskyard.store.driver import make_engine  # noqa: PLC0415
    from taskyard.store.schema.migrate import MIGRATIONS, current_revision  # noqa: PLC0415

    engine = make_engine(url)
    try:
        revision = current_revision(engine)
    except Exception:  # the diagnosis must never hide the original failure
        return None
    finally:
        engine.dispose()
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    if revision is None:
        return f"the database {where} is not initialised: run `taskyard init`"
    if revision != head:
        return (f"the database {where} has schema revision {revision}, this taskyard "
                f"expects {head}: run `taskyard init` to migrate it")
    return None
