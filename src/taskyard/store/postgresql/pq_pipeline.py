"""PostgreSQL: a pipeline of statements sent through libpq itself, below psycopg's cursors.

psycopg runs a pipeline's statements through its cursors: per statement a command
queue, generators and a cursor's result state. The same messages sent with libpq's own
calls, their parameters and rows converted by psycopg's converters (in C), cost the
client less: a lone submit that places its job (three statements) took 0.26-0.27 ms
of the client's CPU against 0.36-0.39 through the cursors, 0.68-0.81 against
0.87-0.92 ms after 10 ms idle, as W2 submits (``bench.lone_submits --mode idle``, two
alternating runs each, stop 81).

Statements are prepared as psycopg prepares them, in psycopg's own cache of the
session (``Connection._prepared``: which statement has which name, when to prepare,
and its ``DEALLOCATE ALL`` at a rollback, which drops ours with its own): the cycle
depends on prepared statements keeping their generic plans (postgresql/cycle.py:
GENERIC_PLANS). A statement of a pipeline that failed is forgotten there (its Parse
may have been skipped) and prepared again under a new name at its next run.
"""

from __future__ import annotations

import select
from collections.abc import Iterator, Sequence
from typing import Any

from psycopg import abc, adapt, errors
from psycopg._preparing import Prepare
from psycopg._queries import PostgresQuery
from psycopg.pq import ExecStatus, PipelineStatus

_KEPT = "taskyard.pq_pipeline.transformer"
"""The key of a pooled connection's kept :class:`Transformer` in its ``info``: it
caches how each Python type is sent, as a kept cursor does (see store/cursor.py)."""

Statement = tuple[str, Any]
"""A statement's text in psycopg's format (``%s``, ``%(name)s``, ``%(name)b``) and its
parameters (a dict or a sequence)."""


def transformer(dbapi: Any, kept: dict[Any, Any] | None) -> abc.Transformer:
    """The converter of ``dbapi``'s values: the one kept in ``kept`` (a pooled
    connection's ``info``) when it is still this connection's, else a new one."""
    if kept is None:
        return adapt.Transformer.from_context(dbapi)
    found = kept.get(_KEPT)
    if found is None or found.connection is not dbapi:
        found = kept[_KEPT] = adapt.Transformer.from_context(dbapi)
    return found


def run(dbapi: Any, tx: abc.Transformer, statements: Sequence[Statement], *,
        begin: bool = False, commit: bool = False,
        sync_after: int | None = None) -> list[list[tuple[Any, ...]]]:
    """Send ``statements`` in one pipeline ending with one Sync and wait for all of
    them: one round trip. ``begin``/``commit``: a ``BEGIN`` first, a ``COMMIT`` last.
    Each statement's rows (``[]`` for one that returns none). An error in one ends the
    pipeline: the server skips the rest (a transaction in autocommit, the pipeline's own,
    is rolled back; one begun before is left aborted) and its error is raised.
    ``sync_after``: one more Sync right after that statement (its index), in the same
    round trip: the server has answered everything up to it, and waits idle in the
    transaction, before it reads the rest (see postgresql/cycle_lock.py: take_lock). The
    statements after it run even when one before failed: in a transaction begun before
    them they then fail too; without one they would run in a transaction of their own."""
    return [rows(tx, result) for result in results(
        dbapi, tx, statements, begin=begin, commit=commit, sync_after=sync_after)]


def results(dbapi: Any, tx: abc.Transformer, statements: Sequence[Statement], *,
            begin: bool = False, commit: bool = False,
            sync_after: int | None = None) -> list[Any]:
    """:func:`run`, with each statement's result (libpq's, its rows still in C) instead
    of its rows: see :func:`rows` and :func:`stream`."""
    pg = dbapi.pgconn
    prepared = dbapi._prepared  # psycopg's own cache of the session's statements
    queries = []
    for text, params in statements:  # all converted before anything is sent or noted
        query = PostgresQuery(tx)
        query.convert(text, params)
        queries.append(query)
    sent = []
    for query in queries:
        prep, name = prepared.get(query, None)
        sent.append((query, prep, name, prepared.maybe_add_to_cache(query, prep, name)))
    try:
        found = _exchange(pg, sent, begin=begin, commit=commit, sync_after=sync_after)
    except BaseException:
        for query, prep, name, _ in sent:  # Parses perhaps never sent: forget them
            if prep is not Prepare.NO:
                prepared.validate(prepared.key(query), prep, name, [])
        if pg.pipeline_status != PipelineStatus.OFF:
            dbapi.close()  # left mid-pipeline: no later statement may run on it
        raise
    failed = next((r for r in found if r.status not in _DONE), None)
    position = 1 if begin else 0
    ran = []
    for query, prep, name, key in sent:
        position += prep is Prepare.SHOULD  # the Parse's own result, before the run's
        result = found[position] if position < len(found) else None
        position += 1
        if failed is not None and prep is not Prepare.NO:
            # Its pipeline failed: the statement's Parse may have been skipped. psycopg
            # forgets it (no results: not to be kept) and prepares it anew next time.
            prepared.validate(prepared.key(query), prep, name, [])
        elif key is not None:
            prepared.validate(key, prep, name, [result])
        ran.append(result)
    if failed is not None:
        raise errors.error_from_result(failed, encoding=tx.encoding)
    return ran


def _exchange(pg: Any, sent: Sequence[tuple[Any, Prepare, bytes, Any]], *, begin: bool,
              commit: bool, sync_after: int | None) -> list[Any]:
    """Send the pipeline and collect its results up to its (last) Sync."""
    pg.enter_pipeline_mode()
    if begin:
        pg.send_query_params(b"BEGIN", None)
    for n, (query, prep, name, _) in enumerate(sent):
        if prep is Prepare.NO:
            pg.send_query_params(query.query, query.params, param_types=query.types,
                                 param_formats=query.formats)
        else:
            if prep is Prepare.SHOULD:
                pg.send_prepare(name, query.query, param_types=query.types)
            pg.send_query_prepared(name, query.params, param_formats=query.formats)
        if n == sync_after:
            pg.pipeline_sync()
    if commit:
        pg.send_query_params(b"COMMIT", None)
    pg.pipeline_sync()
    _flush(pg)
    found = _collect(pg, 1 + (sync_after is not None and 0 <= sync_after < len(sent)))
    pg.exit_pipeline_mode()
    return found


_DONE = (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK)
"""A statement that ran. The first other (an error) is the pipeline's: those after it
were skipped (``PIPELINE_ABORTED``)."""


def rows(tx: abc.Transformer, result: Any) -> list[tuple[Any, ...]]:
    """A statement's rows as Python values (``[]`` for one that returns none)."""
    if result.status != ExecStatus.TUPLES_OK or not result.ntuples:
        return []
    tx.set_pgresult(result)
    return tx.load_rows(0, result.ntuples, tuple)


def stream(dbapi: Any, result: Any, size: int) -> Iterator[tuple[Any, ...]]:
    """A statement's rows as Python values ``size`` at a time (those not yet taken stay
    in C, about a third of their memory as tuples), by a converter of their own: the
    unit's next statements may run meanwhile."""
    total = result.ntuples if result.status == ExecStatus.TUPLES_OK else 0
    if not total:
        return
    tx = adapt.Transformer.from_context(dbapi)
    tx.set_pgresult(result)
    for start in range(0, total, size):
        yield from tx.load_rows(start, min(start + size, total), tuple)


def _flush(pg: Any) -> None:
    """Send what libpq holds. While it waits for room on the socket it also reads: the
    server answers the pipeline's first statements as the rest arrives, and it stops
    reading once its own answers no longer fit (both sides would wait, for ever)."""
    while pg.flush():  # 1: more to send once the socket takes it
        readable, _, _ = select.select([pg.socket], [pg.socket], [])
        if readable:
            pg.consume_input()


def _collect(pg: Any, syncs: int) -> list[Any]:
    """Every statement's result up to the pipeline's last Sync, of ``syncs`` (one result
    each: none of ours is a ``COPY`` nor returns several)."""
    results: list[Any] = []
    poller = None
    while True:
        while pg.is_busy():
            if poller is None:
                poller = select.poll()
                poller.register(pg.socket, select.POLLIN)
            poller.poll()
            pg.consume_input()
        result = pg.get_result()
        if result is None:  # the end of one statement's results
            continue
        if result.status == ExecStatus.PIPELINE_SYNC:
            syncs -= 1
            if not syncs:
                return results
            continue
        results.append(result)

