"""Task graphs: atomic validated submission, live additions, cancel, reading."""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from taskyard.core.graph import (
    CONDITIONS,
    Edge,
    GraphError,
    GraphSpec,
    TaskNode,
    parse_graph,
    references,
    substitute_ids,
)
from taskyard.core.locks import LockTemplateError
from taskyard.core.states import ACTIVE, TERMINAL, AttemptState, JobState
from taskyard.store import schema as t
from taskyard.store.base import job_key, routing_key
from taskyard.store.errors import Conflict, InvalidInput, NotFound
from taskyard.store.jobs import (
    JOB_COLUMNS,
    JOB_FROM,
    JobStore,
    attempt_record,
    locks_text,
    pools_text,
    to_record,
)
from taskyard.store.raw import insert_edges
from taskyard.store.records import GraphRecord, JobRecord, JobSubmission, TaskTypeSpec
from taskyard.store.resolution import Ended, chunks

_J, _D, _G, _A = t.jobs, t.dependencies, t.graphs, t.attempts


_gc_lock = threading.Lock()
_gc_pauses = [0, False]  # graphs being written now; was collection on before the first


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a graph is parsed and written: its hundreds of
    thousands of new objects (none of them cyclic garbage) would trigger full
    collections over the whole heap again and again (a third of a 100,000-task submit).
    Counted across threads: collection resumes when the last concurrent submit ends, and
    only if it was on before the first began."""
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if _gc_pauses[0] == 0 and _gc_pauses[1]:
                gc.enable()


_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=list).encode


def definition_hash(node: TaskNode) -> str:
    """SHA-256 of the task's canonical definition: the JSON of ``definition()`` with
    sorted keys, its args spliced in as already encoded ("args" sorts first)."""
    return hashlib.sha256(definition_text(node).encode()).hexdigest()


def definition_text(node: TaskNode) -> str:
    """The canonical JSON that :func:`definition_hash` hashes. Its keys sort as args,
    convergence, locks, pools, priority, requires, reruns, routing, timeout, type: the
    parts before and after requires repeat from task to task, and are encoded once."""
    return ('{"args":' + node.args_text + "," + _head(node.convergence, node.locks, node.pools,
                                                      node.priority)
            + ',"requires":' + _requires_text(node.requires) + ","
            + _tail(node.reruns, node.routing, node.timeout, node.type))


_string = json.encoder.encode_basestring_ascii  # as _canonical encodes a string
_ON = {on: "," + _string(on) + "]" for on in CONDITIONS}


def _requires_text(edges: tuple[Edge, ...]) -> str:
    """``_canonical(edges)`` (each edge, a named tuple, as [label, on]), built directly:
    about twice as fast, once per task of a graph."""
    return "[" + ",".join(["[" + _string(label) + _ON[on] for label, on in edges]) + "]"


@functools.lru_cache(maxsize=1024, typed=True)
def _head(convergence: str, locks: tuple[str, ...], pools: tuple[str, ...] | None,
          priority: int) -> str:
    return _canonical({"convergence": convergence, "locks": locks, "pools": pools,
                       "priority": priority})[1:-1]


@functools.lru_cache(maxsize=1024, typed=True)
def _tail(reruns: int | None, routing: str, timeout: float | None, type_: str) -> str:
    return _canonical({"reruns": reruns, "routing": routing, "timeout": timeout,
                       "type": type_})[1:]


COLUMNS = (
    "type", "args", "priority", "pools", "cost", "locks", "retries", "retry_delay",
    "retry_backoff", "retry_max_delay", "max_worker_losses", "timeout", "run_after", "label",
    "graph_id", "routing", "launch_type", "schedule_name", "dedup_key", "state", "unmet_deps",
    "convergence", "definition_hash",
)
"""The keys of :func:`job_row`, in the order of :func:`graph_rows`' tuples."""


def graph_rows(graph_id: int, spec: GraphSpec,
               specs: Mapping[str, TaskTypeSpec]) -> Iterator[tuple[Any, ...]]:
    """The jobs rows of a validated graph's tasks, as :func:`job_row` makes them for a
    submission, built as tuples: the per-type part once, the per-task part per task.
    A generator: PostgreSQL inserts the first rows while the next are computed."""
    types = {
        name: (ts.cost, ts.retries, ts.retry_delay, ts.retry_backoff, ts.retry_max_delay,
               ts.max_worker_losses, ts.timeout, pools_text(tuple(ts.pools)))
        for name, ts in specs.items()
    }
    routings: dict[str, str] = {}
    for label, node in spec.tasks.items():
        ts = specs[node.type]
        cost, retries, delay, backoff, max_delay, losses, timeout, pools = types[node.type]
        try:
            locks = locks_text(ts, node.args, node.locks)
        except LockTemplateError as exc:
            raise InvalidInput(f"task {label!r}: {exc}") from None
        routing = routings.get(node.routing)
        if routing is None:
            # Stored as "<graph routing>.<job routing>": the tail of its events' keys.
            routing = routings[node.routing] = f"{spec.routing or '_'}.{node.routing or '_'}"
        yield (
            node.type, node.args_text, node.priority,
            pools if node.pools is None else pools_text(node.pools), cost, locks,
            retries if node.reruns is None else node.reruns, delay, backoff, max_delay,
            losses, timeout if node.timeout is None else node.timeout, None, label, graph_id,
            routing, "graph", None, None,
            JobState.WAITING if node.requires else JobState.PENDING, len(node.requires),
            node.convergence, definition_hash(node),
        )


class GraphStore(JobStore):
    def submit_graph(self, doc: Mapping[str, Any]) -> int:
        """Validate the whole graph, then write it in one transaction; returns its id."""
        with gc_paused(), self._tx() as conn:
            spec = self._parse(conn, doc, existing=())
            graph_id = int(conn.execute(
                insert(_G).values(state="running", routing=spec.routing, created_at=self._now,
                                  last_progress_at=self._now, jobs_total=len(spec.tasks))
                .returning(_G.c.id)
            ).scalar_one())
            self._events(conn, [("graph-running", routing_key(graph_id, spec.routing, ""),
                                 {"graph_id": graph_id, "state": "running",
                                  "routing": spec.routing}, None, graph_id)])
            self._write_tasks(conn, graph_id, spec, existing={})
        return graph_id

    def add_graph_tasks(self, graph_id: int, doc: Mapping[str, Any]) -> list[int]:
        """Add tasks to a graph; identical re-added labels are no-ops. Returns new job ids."""
        with gc_paused(), self._tx() as conn:
            graph = conn.execute(select(_G).where(_G.c.id == graph_id)).first()
            if graph is None:
                raise NotFound(f"no graph {graph_id}")
            if graph.state == "canceled":
                raise Conflict(f"graph {graph_id} is canceled")
            query = (select(_J.c.label, _J.c.id, _J.c.state, _J.c.definition_hash)
                     .where(_J.c.graph_id == graph_id).order_by(_J.c.id))
            if not self.sqlite:
                # New tasks may require these jobs: a concurrent completion must not
                # read their dependents before our new edges are visible (see prereqs).
                query = query.with_for_update()
            existing = {r.label: (r.id, r.state, r.definition_hash) for r in conn.execute(query)}
            spec = self._parse(conn, {"routing": graph.routing, **doc}, existing=existing)
            fresh: dict[str, TaskNode] = {}
            for label, node in spec.tasks.items():
                if label not in existing:
                    fresh[label] = node
                elif existing[label][2] != definition_hash(node):
                    raise InvalidInput(
                        f"task {label!r}: already in graph {graph_id} with another definition"
                    )
            if not fresh:
                return []
            conn.execute(
                update(_G).where(_G.c.id == graph_id)
                .values(jobs_total=_G.c.jobs_total + len(fresh), last_progress_at=self._now)
            )
            if graph.state == "finished":
                conn.execute(update(_G).where(_G.c.id == graph_id)
                             .values(state="running", finished_at=None))
                self._events(conn, [("graph-running", routing_key(graph_id, graph.routing, ""),
                                     {"graph_id": graph_id, "state": "running",
                                      "routing": graph.routing}, None, graph_id)])
            ids = self._write_tasks(conn, graph_id, GraphSpec(spec.routing, fresh),
                                    existing={k: (v[0], v[1]) for k, v in existing.items()})
        return ids

    def _parse(self, conn: Connection, doc: Mapping[str, Any], existing: Any) -> GraphSpec:
        tasks = doc.get("tasks") if isinstance(doc, Mapping) else None
        names = {b.get("type") for b in tasks.values() if isinstance(b, Mapping)} if isinstance(
            tasks, Mapping) else set()
        known = set(conn.execute(
            select(t.task_types.c.name).where(t.task_types.c.name.in_(
                [n for n in names if isinstance(n, str)]))
        ).scalars())
        try:
            return parse_graph(doc, known_types=known.__contains__, existing=existing,
                               limits=self.limits)
        except GraphError as exc:
            raise InvalidInput(str(exc)) from None

    def _write_tasks(
        self, conn: Connection, graph_id: int, spec: GraphSpec,
        existing: Mapping[str, tuple[int, str]],
    ) -> list[int]:
        specs = self._specs_for(conn, {n.type for n in spec.tasks.values()})
        plan = None
        if any(ts.prerequisites for ts in specs.values()):
            # Update on launch applies to graph tasks too: a prerequisite is one more
            # parent of the task (outside the graph), spawned or reused as for a submit.
            plan = self._plan_prerequisites(conn, [
                JobSubmission(type=node.type, args=node.args, priority=node.priority,
                              label=label, graph_id=graph_id, launch_type="graph")
                for label, node in spec.tasks.items()], specs)
        if plan is not None and (plan.spawn or plan.waits):
            ids = self._insert_with_prerequisites(
                conn, [dict(zip(COLUMNS, row, strict=True))
                       for row in graph_rows(graph_id, spec, specs)], plan, specs)
        else:
            ids = self._insert_rows(conn, COLUMNS, graph_rows(graph_id, spec, specs),
                                    len(spec.tasks))
            self._events(conn, [
                ("job-pending", job_key(graph_id, routing), {"job_id": job_id, "type": node.type},
                 job_id, graph_id)
                for job_id, node in zip(ids, spec.tasks.values(), strict=True)
                if not node.requires
                for routing in (f"{spec.routing or '_'}.{node.routing or '_'}",)
            ])
        id_of = dict(zip(spec.tasks, ids, strict=True))
        id_of.update({label: pair[0] for label, pair in existing.items()})
        # $subs needs every id, known only now: rewrite the args that use it.
        rewrites = [
            {"jid": id_of[label], "new_args": json.dumps(
                substitute_ids(node.args, id_of), sort_keys=True, separators=(",", ":"))}
            for label, node in spec.tasks.items()
            if '"$' in node.args_text and references(node.args)
        ]
        if rewrites:
            conn.execute(update(_J).where(_J.c.id == bindparam("jid"))
                         .values(args=bindparam("new_args")), rewrites)
        insert_edges(conn, [(id_of[label], id_of[e.label], e.on)
                            for label, node in spec.tasks.items() for e in node.requires])
        # Edges to tasks that already ended (add-tasks) resolve now.
        done = [Ended(job_id, JobState(state), graph_id)
                for job_id, state in existing.values() if state in TERMINAL]
        if done:
            fresh_ids = set(ids)
            ended = self._propagate(conn, done, only=fresh_ids)
            if ended:
                self._jobs_ended(conn, ended)
        self._notify(conn, ["scheduler"])
        return ids

    def get_graph(self, graph_id: int, *, jobs: bool = True) -> GraphRecord:
        with self._read() as conn:
            row = conn.execute(select(_G).where(_G.c.id == graph_id)).first()
        if row is None:
            raise NotFound(f"no graph {graph_id}")
        members: Sequence[JobRecord] = self._graph_jobs(graph_id) if jobs else ()
        return _graph_record(row, members)

    def _graph_jobs(self, graph_id: int) -> list[JobRecord]:
        with self._read() as conn:
            rows = conn.execute(select(*JOB_COLUMNS).select_from(JOB_FROM)
                                .where(_J.c.graph_id == graph_id).order_by(_J.c.id)).all()
            tries: dict[int, list[Any]] = {}
            for r in conn.execute(
                select(_A).join(_J, _J.c.id == _A.c.job_id)
                .where(_J.c.graph_id == graph_id).order_by(_A.c.job_id, _A.c.attempt)
            ):
                tries.setdefault(r.job_id, []).append(attempt_record(r))
        return [to_record(r, tries.get(r.id, ())) for r in rows]

    def list_graphs(self, *, state: str | None = None, limit: int = 100) -> list[GraphRecord]:
        query = select(_G).order_by(_G.c.id.desc()).limit(limit)
        if state is not None:
            query = query.where(_G.c.state == state)
        with self._read() as conn:
            return [_graph_record(r, ()) for r in conn.execute(query)]

    def cancel_graph(self, graph_id: int) -> GraphRecord:
        """Cancel every unfinished job (running ones are stopped by their workers)."""
        with self._tx() as conn:
            graph = conn.execute(select(_G).where(_G.c.id == graph_id)).first()
            if graph is None:
                raise NotFound(f"no graph {graph_id}")
            if graph.state in ("canceled", "finished"):
                raise Conflict(f"graph {graph_id} is already {graph.state}")
            self._set_graph_state(conn, graph_id, "canceled", graph.routing, {})
            workers = set(conn.execute(
                select(_J.c.worker_id).where(_J.c.graph_id == graph_id, _J.c.state.in_(ACTIVE))
            ).scalars())
            rows = conn.execute(
                update(_J)
                .where(_J.c.graph_id == graph_id, _J.c.state.not_in(TERMINAL))
                .values(state=JobState.CANCELED, worker_id=None, deadline=None,
                        finished_at=self._now, error="graph canceled",
                        cancel_requested=_J.c.state.in_(ACTIVE))
                .returning(_J.c.id, _J.c.attempt, _J.c.routing)
            ).all()
            for part in chunks([r.id for r in rows]):
                conn.execute(
                    update(_A).where(_A.c.job_id.in_(part), _A.c.state.in_(ACTIVE))
                    .values(state=AttemptState.CANCELED, finished_at=self._now)
                )
            self._events(conn, [("job-exception", job_key(graph_id, r.routing),
                                 {"job_id": r.id, "reason": "graph canceled"}, r.id, graph_id)
                                for r in rows])
            # Jobs outside the graph may wait on these (a prerequisite reused by a later
            # launch): they must end too, never wait forever.
            self._jobs_ended(conn, [Ended(r.id, JobState.CANCELED, graph_id) for r in rows])
            conn.execute(update(_G).where(_G.c.id == graph_id)
                         .values(jobs_done=_G.c.jobs_total))
            self._notify(conn, ["scheduler", *(f"worker.{w}" for w in sorted(workers))])
        return self.get_graph(graph_id)


def _graph_record(row: Any, jobs: Sequence[JobRecord]) -> GraphRecord:
    return GraphRecord(
        id=row.id, state=row.state, routing=row.routing, created_at=row.created_at,
        finished_at=row.finished_at, jobs_total=row.jobs_total, jobs_done=row.jobs_done,
        stalled_at=row.stalled_at, jobs=tuple(jobs),
    )
