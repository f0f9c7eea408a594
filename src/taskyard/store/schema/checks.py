"""Check constraints that keep a column within a set of names, written for each backend.

PostgreSQL keeps a check as a node tree in text (``pg_constraint.conbin``) and, for every
statement that inserts or updates rows of the table, reads it back and prepares it
again (``ExecRelCheck``: no cache survives the statement). ``state IN ('a', 'b', ...)``
is stored as an array built from one cast constant per name, so that the eight checks of
``jobs`` were 10.8 KB to read and fold per statement: a one-row ``UPDATE`` of a job took
46-51 us of server time with them, 12-13 us without (migration 0021). The same rule
written as ``state::text = ANY ('{a,b,...}'::text[])`` is one array constant: 33 us with
every check kept. SQLite compiles its checks into each prepared statement once, so it
keeps the plain ``IN`` list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import CheckConstraint

_NAME = re.compile(r"[a-z][a-z_]*\Z")


def quoted(names: Iterable[str]) -> str:
    """SQL: ``'a', 'b', ...`` (sorted), for an ``IN`` list."""
    return ", ".join(f"'{n}'" for n in sorted(names))


def one_of(column: str, names: Iterable[str], *,
           negate: bool = False) -> tuple[str, str]:
    """SQL (SQLite's, PostgreSQL's): ``column`` is one of ``names`` (``negate``: none)."""
    values = sorted(names)
    for value in values:  # inside an array literal: no quoting is needed nor done
        if not _NAME.match(value):
            raise ValueError(f"{value!r}: a checked name is lower-case letters and '_'")
    array = "'{" + ",".join(values) + "}'::text[]"
    if negate:
        return f"{column} NOT IN ({quoted(values)})", f"{column}::text <> ALL ({array})"
    return f"{column} IN ({quoted(values)})", f"{column}::text = ANY ({array})"


def checks(name: str, form: str, member: tuple[str, str]) -> list[CheckConstraint]:
    """The check ``name``: ``form`` with ``{}`` replaced by each backend's SQL of
    ``member`` (see :func:`one_of`), one constraint per backend."""
    sqlite, postgresql = member
    return [CheckConstraint(form.format(sqlite), name=name).ddl_if(dialect="sqlite"),
            CheckConstraint(form.format(postgresql), name=name).ddl_if(dialect="postgresql")]
