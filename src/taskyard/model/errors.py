"""Errors the store raises; each message names the culprit in one line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class StoreError(Exception):
    """Base of every error taskyard's store raises on purpose."""


class NotFound(StoreError):
    """A job, worker, task type or graph that does not exist."""


class InvalidInput(StoreError):
    """Input rejected before anything was written; the message says which field and why."""


class Conflict(StoreError):
    """The requested transition does not apply to the current state (a lost race or a misuse)."""


class SchemaMissing(StoreError):
    """The database has no taskyard schema, or an older one: run ``taskyard init`` (or
    :meth:`Yard.init`). The database's own error is the ``__cause__``."""


class UnsupportedDatabase(ValueError):
    """The URL names a database taskyard does not run on."""


class DatabaseUrlError(ValueError):
    """``--db`` / ``TASKYARD_DB`` is not a URL taskyard can use (bad usage: exit 2)."""


class NoDatabase(Exception):
    """The SQLite file a command needs does not exist (nothing was created)."""


@contextmanager
def refused_as_invalid(where: str = "") -> Iterator[None]:
    """Input a rule of :mod:`taskyard.core` refuses (a ValueError whose message names
    the field) becomes :class:`InvalidInput`, prefixed with ``where`` when given."""
    try:
        yield
    except ValueError as exc:
        raise InvalidInput(f"{where}: {exc}" if where else str(exc)) from None
