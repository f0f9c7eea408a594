"""Jobs search: filters (id, state, type, label, graph, pool, worker, text in label or
args, a time range), two orders (creation, end) and keyset pages, cheap at 10,000,000
jobs. Read-only.

Which index answers what (one statement per page, never a scan of the table):

- creation order (``-created``, ``created``): a keyset on the id, the order of creation.
  ``state`` and ``type`` filters walk ``ix_jobs_state_id`` (state, id) or
  ``ix_jobs_type_state_id`` (type, state, id) — one branch per (state[, type]), each
  bounded by the page size, merged (a type alone is one branch per state: the old
  ``?type=`` read of every row of the type is gone); ``label`` walks ``ix_jobs_label_id``;
  ``schedule`` ``ix_jobs_schedule``;
  ``graph_id`` ``ix_jobs_graph_label``; ``id`` the primary key; nothing else, the primary
  key. A time range (``since``/``until`` on ``created_at``) becomes an id range by a
  binary search over the primary key (about 25 point reads: ids follow creation time).
- end order (``-finished``, ``finished``): ``ix_jobs_finished`` (finished_at, id), the
  time range on ``finished_at``.
- What no index serves — pool, worker, text, and in end order every filter — is checked
  on the rows the index walk gives, over a bounded stretch per page (``WINDOW`` ids in
  creation order, ``BUDGET`` rows in end order). A page that reaches the bound before it
  is full says so (``complete=False``) and its ``next`` goes on from there: a page never
  costs more than the bound, however rare the match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, bindparam, exists, func, or_, select, union_all
from sqlalchemy.ext.compiler import compiles

from taskyard.core.limits import LimitError, check_text
from taskyard.core.states import JobState
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobRecord
from taskyard.store import schema as t
from taskyard.store.schema.job_rows import JOB_COLUMNS, JOB_FROM, to_record

if TYPE_CHECKING:
    from sqlalchemy import Connection, Select

    from taskyard.store import Store

_J, _A = t.jobs, t.attempts
SORTS = ("-created", "created", "-finished", "finished")
WINDOW = 100_000
"""Ids a creation-order page examines at most when a filter has no index."""
BUDGET = 100_000
"""Rows an end-order page examines at most when it has filters."""
MANY = 20
"""Most values of a repeatable filter (each task type is a walk per state)."""
SLACK = 60.0
"""Seconds of creation time an id bound is widened by: ids are taken in creation order,
but on PostgreSQL ``created_at`` is the time the writing transaction began."""


@dataclass(frozen=True, slots=True)
class JobQuery:
    """What to look for; empty fields do not filter."""

    ids: tuple[int, ...] = ()
    states: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    label: str | None = None
    graph_id: int | None = None
    schedule: str | None = None
    """Jobs of this schedule (its runs, and those it was run for now)."""
    pool: str | None = None
    worker: str | None = None
    text: str | None = None
    """Case-insensitive, in the label or the args' JSON text."""
    since: float | None = None
    until: float | None = None
    """Creation time in creation order, end time in end order: ``[since, until)``."""
    sort: str = "-created"

    def check(self) -> None:
        """InvalidInput naming the field that is wrong."""
        if len(self.types) > MANY or len(self.ids) > MANY:
            raise InvalidInput(f"type, id: at most {MANY} values each")
        texts = [("q", self.text), ("label", self.label), ("pool", self.pool),
                 ("schedule", self.schedule),
                 ("worker", self.worker), *(("type", t) for t in self.types)]
        for field_name, value in texts:
            try:
                check_text(value or "", field_name)
            except LimitError as exc:
                raise InvalidInput(str(exc)) from None
        for state in self.states:
            if state not in set(JobState):
                raise InvalidInput(f"state: unknown state {state!r} "
                                   f"(one of {', '.join(s.value for s in JobState)})")
        if self.sort not in SORTS:
            raise InvalidInput(f"sort: {self.sort!r} is not one of {', '.join(SORTS)}")
        if self.text is not None and not self.text.strip():
            raise InvalidInput("q: empty search text")


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page ended: the last job examined (and its end time in end order)."""

    id: int
    finished_at: float | None = None


@dataclass(frozen=True, slots=True)
class SearchPage:
    items: list[JobRecord]
    next: Position | None
    complete: bool
    """False: the page stopped at its bound before it was full; ``next`` goes on."""


def search_jobs(store: Store, query: JobQuery, *, after: Position | None = None,
                limit: int = 100) -> SearchPage:
    """One page of the jobs ``query`` matches, in its order, after ``after``."""
    query.check()
    if limit < 1:
        raise InvalidInput(f"limit: {limit} must be at least 1")
    with store.read() as tx:
        if query.sort.endswith("created"):
            return _by_creation(tx.conn, query, after, limit)
        return _by_end(tx.conn, query, after, limit)


class _Unindexed(ColumnElement[Any]):
    """A column that the query planner must not reach through an index: SQLite's unary
    ``+`` (``+jobs.state``). The end order walks ``ix_jobs_finished_id`` and checks the
    filters on its rows; given ``state = 'failed'``, SQLite took ``ix_jobs_state_id``
    instead and sorted every failed job by end time (746 ms at 10,000,000 jobs, against
    a few ms for the walk). PostgreSQL weighs the LIMIT: the column as it is."""

    inherit_cache = True

    def __init__(self, column: ColumnElement[Any]) -> None:
        self.column = column
        self.type = column.type


@compiles(_Unindexed)
def _as_is(element: _Unindexed, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.column, **kw))


@compiles(_Unindexed, "sqlite")
def _unary_plus(element: _Unindexed, compiler: Any, **kw: Any) -> str:
    return "+" + str(compiler.process(element.column, **kw))


def _plain(column: ColumnElement[Any]) -> ColumnElement[Any]:
    return column


def _residual(query: JobQuery, *, driven: set[str],
              walked: bool = False) -> list[ColumnElement[bool]]:
    """The filters the driving index does not apply (``driven``: those it does);
    ``walked``: checked on the rows of an index walk, through no other index."""
    found: list[ColumnElement[bool]] = []
    col = _Unindexed if walked else _plain
    if query.states and "state" not in driven:
        found.append(col(_J.c.state).in_(query.states))
    if query.types and "type" not in driven:
        found.append(col(_J.c.type).in_(query.types))
    if query.label is not None and "label" not in driven:
        found.append(col(_J.c.label) == query.label)
    if query.graph_id is not None and "graph" not in driven:
        found.append(col(_J.c.graph_id) == query.graph_id)
    if query.schedule is not None and "schedule" not in driven:
        found.append(col(_J.c.schedule_name) == query.schedule)
    if query.pool is not None:
        # The pools' JSON text holds the name quoted (checked exactly: _records).
        found.append(_J.c.pools.contains(json.dumps(query.pool), autoescape=True))
    if query.worker is not None:
        found.append(exists().where(_A.c.job_id == _J.c.id, _A.c.worker_name == query.worker))
    if query.text is not None:
        pattern = f"%{_escape(query.text)}%"
        found.append(or_(_J.c.label.ilike(pattern, escape="/"),
                         _J.c.args.ilike(pattern, escape="/")))
    return found


def _escape(text: str) -> str:
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


def _by_creation(conn: Connection, query: JobQuery, after: Position | None,
                 limit: int) -> SearchPage:
    desc = query.sort == "-created"
    low, high = _id_range(conn, query.since, query.until)  # ids in [low, high)
    bound = low if desc else high  # where the time range ends this way (None: no end)
    if after is not None:
        if desc:
            high = after.id if high is None else min(high, after.id)
        else:
            low = after.id + 1 if low is None else max(low, after.id + 1)
    branches, driven = _creation_branches(query)
    residual = _residual(query, driven=driven)
    # The exact time range: the id range holds at most a minute of slack either side.
    timed = [_J.c.created_at >= query.since] if query.since is not None else []
    if query.until is not None:
        timed.append(_J.c.created_at < query.until)
    edge: int | None = None
    if residual and not query.ids and query.graph_id is None:
        # Filters no index serves: this page examines one window of ids.
        if desc:
            edge = (high if high is not None else _max_id(conn) + 1) - WINDOW
            low = edge if low is None else max(low, edge)
        else:
            edge = (low if low is not None else _min_id(conn)) + WINDOW
            high = edge if high is None else min(high, edge)
    order = _J.c.id.desc() if desc else _J.c.id.asc()
    selects = []
    for branch in branches:
        where = [*branch, *residual, *timed]
        if low is not None:
            where.append(_J.c.id >= low)
        if high is not None:
            where.append(_J.c.id < high)
        selects.append(select(_J.c.id).where(*where).order_by(order).limit(limit + 1))
    ids = _merged_ids(conn, selects, desc, limit + 1)
    rows = _records(conn, ids[:limit], query.pool)
    if len(ids) > limit:
        return SearchPage(rows, Position(ids[limit - 1]), True)
    if edge is None:
        return SearchPage(rows, None, True)
    if desc:
        done = (bound is not None and bound >= edge) or edge <= _min_id(conn)
        return SearchPage(rows, None if done else Position(edge), done)
    done = (bound is not None and bound <= edge) or edge > _max_id(conn)
    return SearchPage(rows, None if done else Position(edge - 1), done)


def _creation_branches(query: JobQuery) -> tuple[list[list[ColumnElement[bool]]], set[str]]:
    """The driving index's walks (each its own ordered range) and the filters they
    apply, in the module docstring's order of preference."""
    if query.ids:
        return [[_J.c.id.in_(sorted(set(query.ids)))]], set()
    if query.graph_id is not None:
        return [[_J.c.graph_id == query.graph_id]], {"graph"}
    if query.schedule is not None:
        return [[_J.c.schedule_name == query.schedule]], {"schedule"}
    if query.label is not None:
        return [[_J.c.label == query.label]], {"label"}
    states = (query.states or tuple(s.value for s in JobState)) if query.types else query.states
    if not states:
        return [[]], set()
    if not query.types:
        return [[_J.c.state == s] for s in sorted(set(states))], {"state"}
    return ([[_J.c.type == ty, _J.c.state == s] for ty in sorted(set(query.types))
             for s in sorted(set(states))], {"state", "type"})


def _merged_ids(conn: Connection, selects: Sequence[Select[Any]], desc: bool,
                limit: int) -> list[int]:
    if len(selects) == 1:
        return [int(i) for i in conn.execute(selects[0]).scalars()]
    merged = union_all(*(s.subquery().select() for s in selects)).subquery()
    order = merged.c.id.desc() if desc else merged.c.id.asc()
    return [int(i) for i in conn.execute(select(merged.c.id).order_by(order).limit(limit))
            .scalars()]


def _records(conn: Connection, ids: Sequence[int], pool: str | None) -> list[JobRecord]:
    """The jobs with these ids, in this order; a pool filter checked exactly (the SQL
    one folds ASCII case on SQLite: a page may then hold fewer jobs than its size)."""
    if not ids:
        return []
    rows = conn.execute(select(*JOB_COLUMNS).select_from(JOB_FROM)
                        .where(_J.c.id.in_(list(ids)))).all()
    found = {r.id: r for r in (to_record(row) for row in rows)}
    return [found[i] for i in ids if i in found and (pool is None or pool in found[i].pools)]


def _min_id(conn: Connection) -> int:
    return int(conn.execute(select(func.min(_J.c.id))).scalar_one() or 0)


def _max_id(conn: Connection) -> int:
    return int(conn.execute(select(func.max(_J.c.id))).scalar_one() or 0)


def _id_range(conn: Connection, since: float | None,
              until: float | None) -> tuple[int | None, int | None]:
    """Ids bounding the jobs created in ``[since, until)``, widened by ``SLACK``."""
    low = None if since is None else _first_id_from(conn, since - SLACK)
    high = None if until is None else _first_id_from(conn, until + SLACK)
    return low, high


def _first_id_from(conn: Connection, when: float) -> int:
    """The first id whose job was created at ``when`` or later (one past the last id if
    none): a binary search over the primary key, each step one point read."""
    low, high = _min_id(conn), _max_id(conn) + 1
    # One lower bound only: given two, SQLite seeks to one and filters on the other.
    probe = (select(_J.c.id, _J.c.created_at).where(_J.c.id >= bindparam("middle"))
             .order_by(_J.c.id).limit(1))
    while low < high:
        middle = (low + high) // 2
        row = conn.execute(probe, {"middle": middle}).first()
        if row is None or row.created_at >= when:
            high = middle
        else:
            low = int(row.id) + 1
    return low


def _by_end(conn: Connection, query: JobQuery, after: Position | None,
            limit: int) -> SearchPage:
    desc = query.sort == "-finished"
    where: list[ColumnElement[bool]] = [_J.c.finished_at.is_not(None)]
    if query.since is not None:
        where.append(_J.c.finished_at >= query.since)
    if query.until is not None:
        where.append(_J.c.finished_at < query.until)
    if query.ids:
        where.append(_J.c.id.in_(sorted(set(query.ids))))
    if after is not None and after.finished_at is not None:
        where.append(_beyond(after, desc))
    order = ((_J.c.finished_at.desc(), _J.c.id.desc()) if desc
             else (_J.c.finished_at.asc(), _J.c.id.asc()))
    residual = _residual(query, driven=set(), walked=True)
    edge: Position | None = None
    if residual and not query.ids:
        row = conn.execute(select(_J.c.finished_at, _J.c.id).where(*where).order_by(*order)
                           .limit(1).offset(BUDGET - 1)).first()
        if row is not None:
            edge = Position(int(row.id), float(row.finished_at))
            where.append(~_beyond(edge, desc))  # up to the edge, the edge included
    ids = [int(i) for i in conn.execute(select(_J.c.id).where(*where, *residual)
                                        .order_by(*order).limit(limit + 1)).scalars()]
    rows = _records(conn, ids[:limit], query.pool)
    if len(ids) > limit:
        (last,) = _records(conn, ids[limit - 1:limit], None)
        return SearchPage(rows, Position(last.id, last.finished_at), True)
    if edge is None:
        return SearchPage(rows, None, True)
    return SearchPage(rows, edge, False)


def _beyond(at: Position, desc: bool) -> ColumnElement[bool]:
    """Rows after ``at`` in end order."""
    f, i = _J.c.finished_at, _J.c.id
    if desc:
        return or_(f < at.finished_at, and_(f == at.finished_at, i < at.id))
    return or_(f > at.finished_at, and_(f == at.finished_at, i > at.id))
