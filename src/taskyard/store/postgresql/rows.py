"""PostgreSQL: row sets, membership tests, named-parameter statements and ``COPY``.

A row set travels as one JSON array of arrays (serialised in C on our side, parsed in
C by the server) or, from :data:`MANY_ROWS` rows, as one array per column sent in
binary (no text to parse: cheaper from there on, dearer below); a membership test is
``= ANY(array)``: one statement text whatever the number of rows, which psycopg
prepares once.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from psycopg.pq import TransactionStatus

from taskyard.store.cursor import Cursor, id_array
from taskyard.store.postgresql import pq_pipeline


def pg_row_set(types: Sequence[str], param: str) -> str:
    """A row set from the JSON array of arrays in the named parameter ``param``."""
    fields = ", ".join(f"(e->>{i})::{kind}" for i, kind in enumerate(types))
    return f"SELECT {fields} FROM json_array_elements(%({param})s::json) AS e"


MANY_ROWS = 16
"""From this many rows a row set goes as arrays (:func:`pg_array_set`). The server
wrote 1,000 events in 4.4-4.7 ms from arrays, in 6.3 ms from a JSON row set; 20 events
in 221-224 against 231-242 µs a statement, 5 in 141-147 against 131-132 µs."""


def pg_array_set(types: Sequence[str], param: str) -> str:
    """:func:`pg_row_set` from one array per column, sent in binary: the named parameters
    ``param0``, ``param1``… (:func:`array_params`)."""
    arrays = ", ".join(f"%({param}{i})b::{kind}[]" for i, kind in enumerate(types))
    return f"SELECT * FROM unnest({arrays})"


def array_params(rows: Sequence[Sequence[Any]], param: str) -> dict[str, list[Any]]:
    """The parameters of :func:`pg_array_set` for ``rows`` (at least one)."""
    return {f"{param}{i}": list(column) for i, column in enumerate(zip(*rows, strict=True))}


@functools.lru_cache(maxsize=128)
def _named(sql: str, now_sql: str) -> str:
    return sql.replace("{now}", now_sql)


@functools.lru_cache(maxsize=64)
def _uses(sql: str) -> tuple[str, ...]:
    """The named parameters ``sql`` uses. psycopg converts a statement with more than
    50 parameters (or longer than 4 KiB) anew at each execution, a regular expression
    over its whole text: a pipeline's statements sharing one dict would each take the
    union of their parameters, and miss psycopg's cache. (``%(name)b``: a value sent in
    binary.)"""
    return tuple(dict.fromkeys(re.findall(r"%\((\w+)\)[sb]", sql)))


Parameters = dict[str, Any] | Sequence[Any]
"""A statement's parameters: by name (``%(name)s``), or by position (``%s``) for a
statement whose values come in order (a one-row insert: no dict of names to build)."""


def named(raw: Cursor, sql: str, params: Parameters) -> list[tuple[Any, ...]]:
    """``sql`` with ``%(name)s`` parameters (a parameter may be used several times), or
    ``%s`` ones given in order, and ``{now}``; rows are passed as
    :func:`taskyard.store.cursor.json_rows`. The unit's first statement carries its
    ``BEGIN`` (see :func:`pipelined`). A pipeline of one statement: below psycopg's
    cursors (pq_pipeline), and a statement psycopg prepares is prepared in the same
    round trip (its cursor sends the ``Parse`` alone and waits for it)."""
    return pipelined(raw, [(sql, params)])[0]


def not_begun(raw: Cursor) -> bool:
    """The unit's transaction has not begun (nothing was sent in it yet)."""
    return bool(raw.dbapi.pgconn.transaction_status == TransactionStatus.IDLE)


def opens(raw: Cursor) -> bool:
    """The next statement begins the unit's transaction: psycopg would send a ``BEGIN``
    first and wait for its answer, a round trip of its own."""
    dbapi = raw.dbapi
    return bool(dbapi.pgconn.transaction_status == TransactionStatus.IDLE
                and not dbapi.autocommit)


def autocommit(raw: Cursor) -> contextlib.AbstractContextManager[None]:
    """The unit's statements each their own transaction (or a pipeline's, ended by its
    Sync) while the block runs: only before the unit's transaction has begun."""
    return _Autocommit(raw.dbapi)


class _Autocommit:
    """psycopg's ``autocommit`` setter runs a generator through the connection's wait
    loop to refuse a switch inside a transaction or to sync a pipeline: the two
    switches of a lone submit while no worker is live took 6-7 of its 135 µs of CPU.
    Our callers switch only where that check has nothing to do — the unit has sent
    nothing (``not_begun``, checked again here), outside any pipeline — so the block
    sets the flag the setter sets, ``_autocommit`` (psycopg 3.1 to 3.3). Should a
    psycopg rename it, the statements would run in a transaction that the unit's end
    commits: slower, not wrong; tests/store/test_pipeline_whole.py would say so."""

    __slots__ = ("_dbapi",)

    def __init__(self, dbapi: Any) -> None:
        self._dbapi = dbapi

    def __enter__(self) -> None:
        dbapi = self._dbapi
        if dbapi.pgconn.transaction_status != TransactionStatus.IDLE:
            raise RuntimeError("autocommit: the unit's transaction has begun")
        dbapi._autocommit = True

    def __exit__(self, *exc: object) -> None:
        self._dbapi._autocommit = False


def pipelined(raw: Cursor, statements: Sequence[tuple[str, Parameters]], *,
              commit: bool = False, sync_after: int | None = None
              ) -> list[list[tuple[Any, ...]]]:
    """Statements as :func:`named`, sent in one pipeline: one round trip. The server runs
    them in order, each once the one before has ended. Each one's rows. ``commit``: the
    transaction ends with them, in the same round trip; an error in one ends it with
    nothing written (the server skips the rest up to the pipeline's end).

    The pipeline goes below psycopg's cursors (pq_pipeline), which begin no transaction
    of their own (psycopg's cursor would send its ``BEGIN`` alone and wait for the
    answer). When the unit's transaction has not begun, with ``commit`` the pipeline is
    the whole transaction: no ``BEGIN``, the statements up to the pipeline's one Sync
    are a single transaction of the server's, committed by that Sync — all or none, in
    one round trip. Without, the pipeline sends the ``BEGIN`` itself, first (unless the
    connection is in autocommit): the transaction it opens goes on after the pipeline,
    as psycopg's own would (the connection is in it: psycopg begins none and commits or
    rolls back that one). ``sync_after``: see :func:`pq_pipeline.run`."""
    tx = pq_pipeline.transformer(raw.dbapi, raw.kept)
    return [pq_pipeline.rows(tx, result) for result in pipelined_results(
        raw, statements, commit=commit, tx=tx, sync_after=sync_after)]


def pipelined_results(raw: Cursor, statements: Sequence[tuple[str, Parameters]], *,
                      commit: bool = False, tx: Any = None,
                      sync_after: int | None = None) -> list[Any]:
    """:func:`pipelined`, with each statement's result (libpq's: see
    :func:`pq_pipeline.rows` and :func:`pq_pipeline.stream`) instead of its rows.
    ``tx``: the converter to send with (else the one kept with the connection)."""
    idle = not_begun(raw)
    whole = commit and idle
    dbapi = raw.dbapi
    texts = []
    for sql, params in statements:
        text = _named(sql, raw.now_sql)
        texts.append((text, {name: params[name] for name in _uses(text)}
                      if isinstance(params, dict) else params))
    # The same messages as psycopg's cursors, for less of the client's CPU (see
    # pq_pipeline), which begin no transaction: the pipeline sends its BEGIN itself.
    return pq_pipeline.results(
        dbapi, tx if tx is not None else pq_pipeline.transformer(dbapi, raw.kept), texts,
        begin=idle and not whole and not dbapi.autocommit, commit=commit and not whole,
        sync_after=sync_after)


def pipelined_cursors(raw: Cursor, statements: Sequence[tuple[str, Parameters]], *,
                      commit: bool = False,
                      meanwhile: Callable[[], object] | None = None) -> list[Any]:
    """:func:`pipelined`, with each statement's cursor instead of its rows: each one's
    rows are to be read before the unit's next statement on that cursor. ``meanwhile``
    runs once every statement is sent, while the server runs them (the client's own
    work, overlapped with the round trip); an error it raises ends the pipeline and
    propagates (the unit then rolls back)."""
    idle = not_begun(raw)
    whole = commit and idle
    begin = idle and not whole and not raw.dbapi.autocommit
    cursors = [raw.cursor, *(raw.pipelined(n) for n in range(1, len(statements)))]
    with autocommit(raw) if whole or begin else contextlib.nullcontext(), \
            raw.dbapi.pipeline():
        if begin:
            raw.pipelined(len(statements)).execute("BEGIN")
        for cursor, (sql, params) in zip(cursors, statements, strict=True):
            text = _named(sql, raw.now_sql)
            cursor.execute(text, {name: params[name] for name in _uses(text)}
                           if isinstance(params, dict) else params)
        if commit and not whole:
            raw.pipelined(len(statements)).execute("COMMIT")
        if meanwhile is not None:
            meanwhile()
    return cursors


def copy(raw: Cursor, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """``COPY`` the rows into ``table`` (in this transaction; the table's constraints,
    triggers and indexes apply as to an INSERT). Values are plain Python str, int,
    float, bool or None."""
    with raw.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as out:
        write = out.write_row
        for row in rows:
            write(row)


def member(column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
    if all(isinstance(i, int) for i in ids):  # ids: an array literal is cheapest
        return f"{column} = ANY(?::bigint[])", [id_array(ids)]
    return f"{column} = ANY(?)", [list(ids)]
