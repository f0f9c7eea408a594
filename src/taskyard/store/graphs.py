"""Task graphs: atomic validated submission, live additions, cancel, reading."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from taskyard.core.graph import (
    GraphError,
    GraphSpec,
    TaskNode,
    parse_graph,
    references,
    substitute_ids,
)
from taskyard.core.states import ACTIVE, TERMINAL, AttemptState, JobState
from taskyard.store import schema as t
from taskyard.store.base import job_key, routing_key
from taskyard.store.errors import Conflict, InvalidInput, NotFound
from taskyard.store.jobs import (
    JOB_COLUMNS,
    JOB_FROM,
    JobStore,
    attempt_record,
    job_row,
    to_record,
)
from taskyard.store.raw import insert_edges
from taskyard.store.records import GraphRecord, JobRecord, JobSubmission
from taskyard.store.resolution import Ended, chunks

_J, _D, _G, _A = t.jobs, t.dependencies, t.graphs, t.attempts


def definition_hash(node: TaskNode) -> str:
    """SHA-256 of the task's canonical definition: the JSON of ``definition()`` with
    sorted keys, its args spliced in as already encoded ("args" sorts first)."""
    rest = node.definition()
    del rest["args"]
    text = '{"args":' + node.args_text + "," + json.dumps(
        rest, sort_keys=True, separators=(",", ":"), default=list)[1:]
    return hashlib.sha256(text.encode()).hexdigest()


class GraphStore(JobStore):
    def submit_graph(self, doc: Mapping[str, Any]) -> int:
        """Validate the whole graph, then write it in one transaction; returns its id."""
        with self._tx() as conn:
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
        with self._tx() as conn:
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
        labels = list(spec.tasks)
        rows = []
        subs: list[JobSubmission] = []
        for index, label in enumerate(labels):
            node = spec.tasks[label]
            sub = JobSubmission(
                type=node.type, args=node.args, priority=node.priority, pools=node.pools,
                locks=node.locks, retries=node.reruns, timeout=node.timeout, label=label,
                graph_id=graph_id, launch_type="graph",
                # Stored as "<graph routing>.<job routing>": the tail of its events' keys.
                routing=f"{spec.routing or '_'}.{node.routing or '_'}",
                args_text=node.args_text,
            )
            row = job_row(sub, specs[node.type], index, args_checked=True)
            row.update(
                state=JobState.WAITING if node.requires else JobState.PENDING,
                unmet_deps=len(node.requires),
                convergence=node.convergence,
                definition_hash=definition_hash(node),
            )
            rows.append(row)
            subs.append(sub)
        # Update on launch applies to graph tasks too: a prerequisite is one more
        # parent of the task (outside the graph), spawned or reused as for a submit.
        plan = self._plan_prerequisites(conn, subs, specs)
        if plan.spawn or plan.waits:
            ids = self._insert_with_prerequisites(conn, rows, plan, specs)
        else:
            ids = self._insert_jobs(conn, rows)
        id_of = dict(zip(labels, ids, strict=True))
        id_of.update({label: pair[0] for label, pair in existing.items()})
        # $subs needs every id, known only now: rewrite the args that use it.
        rewrites = [
            {"jid": id_of[label], "new_args": json.dumps(
                substitute_ids(node.args, id_of), sort_keys=True, separators=(",", ":"))}
            for label, node in spec.tasks.items() if references(node.args)
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
