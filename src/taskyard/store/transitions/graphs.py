"""Task graphs: atomic validated submission, live additions, cancel, reading."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, insert, select, update

from taskyard.core.graph import GraphError, GraphSpec, TaskNode, parse_graph
from taskyard.core.states import ACTIVE, TERMINAL, AttemptState, JobState
from taskyard.core.substitution import references, substitute_ids
from taskyard.core.waits import Kind
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import GraphRecord, JobRecord, JobSubmission
from taskyard.store import schema as t
from taskyard.store.marks import reads
from taskyard.store.schema.graph_rows import COLUMNS, definition_hash, gc_paused, graph_rows
from taskyard.store.schema.job_rows import JOB_COLUMNS, JOB_FROM, attempt_record, to_record
from taskyard.store.transitions.dependents import Ended, chunks
from taskyard.store.transitions.events import graph_changed, job_exception, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_J, _D, _G, _A = t.jobs, t.dependencies, t.graphs, t.attempts


class Graphs:
    """Task graphs in one transaction."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def submit(self, doc: Mapping[str, Any]) -> int:
        """Validate the whole graph, then write it; returns its id."""
        conn = self.tx.conn
        with gc_paused():
            spec = self._parse(doc, existing=())
            graph_id = int(conn.execute(
                insert(_G).values(state="running", routing=spec.routing, created_at=self.tx.now,
                                  last_progress_at=self.tx.now, jobs_total=len(spec.tasks))
                .returning(_G.c.id)
            ).scalar_one())
            self.tx.events.append([graph_changed(graph_id, "running", spec.routing)])
            self._write_tasks(graph_id, spec, existing={})
        return graph_id

    def add_tasks(self, graph_id: int, doc: Mapping[str, Any]) -> list[int]:
        """Add tasks to a graph; identical re-added labels are no-ops. Returns new job ids."""
        conn = self.tx.conn
        with gc_paused():
            graph = conn.execute(select(_G).where(_G.c.id == graph_id)).first()
            if graph is None:
                raise NotFound(f"no graph {graph_id}")
            if graph.state == "canceled":
                raise Conflict(f"graph {graph_id} is canceled")
            query = (select(_J.c.label, _J.c.id, _J.c.state, _J.c.definition_hash)
                     .where(_J.c.graph_id == graph_id).order_by(_J.c.id))
            # New tasks may require these jobs: a concurrent completion must not read
            # their dependents before our new edges are visible (see prereqs).
            existing = {r.label: (r.id, r.state, r.definition_hash)
                        for r in conn.execute(self.tx.driver.lock_rows(query))}
            spec = self._parse({"routing": graph.routing, **doc}, existing=existing)
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
                .values(jobs_total=_G.c.jobs_total + len(fresh), last_progress_at=self.tx.now)
            )
            if graph.state == "finished":
                conn.execute(update(_G).where(_G.c.id == graph_id)
                             .values(state="running", finished_at=None))
                self.tx.events.append([graph_changed(graph_id, "running", graph.routing)])
            ids = self._write_tasks(graph_id, GraphSpec(spec.routing, fresh),
                                    existing={k: (v[0], v[1]) for k, v in existing.items()})
        return ids

    def _parse(self, doc: Mapping[str, Any], existing: Any) -> GraphSpec:
        tasks = doc.get("tasks") if isinstance(doc, Mapping) else None
        names = {b.get("type") for b in tasks.values() if isinstance(b, Mapping)} if isinstance(
            tasks, Mapping) else set()
        known: set[str] | None = None

        def is_known(name: str) -> bool:
            # Read once, when parse_graph asks: by then every task's type passed the rule
            # for names (a NUL would otherwise reach PostgreSQL as a raw error).
            nonlocal known
            if known is None:
                known = set(self.tx.conn.execute(
                    select(t.task_types.c.name).where(t.task_types.c.name.in_(
                        [n for n in names if isinstance(n, str)]))
                ).scalars())
            return name in known

        try:
            return parse_graph(doc, known_types=is_known, existing=existing,
                               limits=self.tx.store.limits)
        except GraphError as exc:
            raise InvalidInput(str(exc)) from None

    def _write_tasks(self, graph_id: int, spec: GraphSpec,
                     existing: Mapping[str, tuple[int, str]]) -> list[int]:
        tx = self.tx
        specs = tx.task_types.by_name({n.type for n in spec.tasks.values() if n.type})
        plan = None
        if any(ts.prerequisites for ts in specs.values()):
            # Update on launch applies to graph tasks too: a prerequisite is one more
            # parent of the task (outside the graph), spawned or reused as for a submit.
            plan = tx.prereqs.plan([
                JobSubmission(type=node.type, args=node.args, priority=node.priority,
                              label=label, graph_id=graph_id, launch_type="graph")
                for label, node in spec.tasks.items()], specs)
        if plan is not None and (plan.spawn or plan.waits):
            ids = tx.jobs.insert_with_prerequisites(
                [dict(zip(COLUMNS, row, strict=True))
                       for row in graph_rows(graph_id, spec, specs)], plan, specs)
        else:
            ids = tx.jobs.insert_rows(COLUMNS, graph_rows(graph_id, spec, specs),
                                      len(spec.tasks), announce=False)
            self.tx.events.append(
                job_pending(job_id, graph_id, f"{spec.routing or '_'}.{node.routing or '_'}",
                            type=node.type)
                for job_id, node in zip(ids, spec.tasks.values(), strict=True)
                if not node.requires and node.kind == Kind.TASK)
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
            tx.conn.execute(update(_J).where(_J.c.id == bindparam("jid"))
                         .values(args=bindparam("new_args")), rewrites)
        tx.driver.insert_edges(tx.raw, [(id_of[label], id_of[e.label], e.on)
                            for label, node in spec.tasks.items() for e in node.requires])
        # Approvals, waits and sleeps without parents await from now on.
        awaiting = [job_id for job_id, node in zip(ids, spec.tasks.values(), strict=True)
                    if node.kind != Kind.TASK and not node.requires]
        if awaiting:
            signaled = tx.waits.started(awaiting)
            if signaled:
                tx.resolution.jobs_ended(signaled)
        # Edges to tasks that already ended (add-tasks) resolve now.
        done = [Ended(job_id, JobState(state), graph_id)
                for job_id, state in existing.values() if state in TERMINAL]
        if done:
            fresh_ids = set(ids)
            ended = tx.resolution.propagate(done, only=fresh_ids)
            if ended:
                tx.resolution.jobs_ended(ended)
        tx.notify("scheduler")
        # The events now, while collection is paused (a large graph has many).
        tx.events.flush()
        return ids

    @reads
    def get(self, graph_id: int, *, jobs: bool = True) -> GraphRecord:
        """The graph, with its jobs unless ``jobs`` is False; NotFound if missing."""
        row = self.tx.conn.execute(select(_G).where(_G.c.id == graph_id)).first()
        if row is None:
            raise NotFound(f"no graph {graph_id}")
        members: Sequence[JobRecord] = self._graph_jobs(graph_id) if jobs else ()
        return _graph_record(row, members)

    def _graph_jobs(self, graph_id: int) -> list[JobRecord]:
        conn = self.tx.conn
        rows = conn.execute(select(*JOB_COLUMNS).select_from(JOB_FROM)
                            .where(_J.c.graph_id == graph_id).order_by(_J.c.id)).all()
        tries: dict[int, list[Any]] = {}
        for r in conn.execute(
            select(_A).join(_J, _J.c.id == _A.c.job_id)
            .where(_J.c.graph_id == graph_id).order_by(_A.c.job_id, _A.c.attempt)
        ):
            tries.setdefault(r.job_id, []).append(attempt_record(r))
        return [to_record(r, tries.get(r.id, ())) for r in rows]

    def cancel(self, graph_id: int) -> GraphRecord:
        """Cancel every unfinished job (running ones are stopped by their workers)."""
        conn = self.tx.conn
        graph = conn.execute(select(_G).where(_G.c.id == graph_id)).first()
        if graph is None:
            raise NotFound(f"no graph {graph_id}")
        if graph.state in ("canceled", "finished"):
            raise Conflict(f"graph {graph_id} is already {graph.state}")
        self.tx.resolution.set_graph_state(graph_id, "canceled", graph.routing, {})
        workers = set(conn.execute(
            select(_J.c.worker_id).where(_J.c.graph_id == graph_id, _J.c.state.in_(ACTIVE))
        ).scalars())
        rows = conn.execute(
            update(_J)
            .where(_J.c.graph_id == graph_id, _J.c.state.not_in(TERMINAL))
            .values(state=JobState.CANCELED, worker_id=None, deadline=None,
                    finished_at=self.tx.now, error="graph canceled",
                    cancel_requested=_J.c.state.in_(ACTIVE))
            .returning(_J.c.id, _J.c.attempt, _J.c.routing)
        ).all()
        for part in chunks([r.id for r in rows]):
            conn.execute(
                update(_A).where(_A.c.job_id.in_(part), _A.c.state.in_(ACTIVE))
                .values(state=AttemptState.CANCELED, finished_at=self.tx.now)
            )
        self.tx.events.append([job_exception(r.id, graph_id, r.routing, "graph canceled")
                               for r in rows])
        # Jobs outside the graph may wait on these (a prerequisite reused by a later
        # launch): they must end too, never wait forever.
        self.tx.resolution.jobs_ended([Ended(r.id, JobState.CANCELED, graph_id) for r in rows])
        conn.execute(update(_G).where(_G.c.id == graph_id)
                     .values(jobs_done=_G.c.jobs_total))
        self.tx.notify("scheduler", *(f"worker.{w}" for w in sorted(workers)))
        return self.get(graph_id)

    @reads
    def list(self, *, state: str | None = None, limit: int = 100) -> list[GraphRecord]:
        query = select(_G).order_by(_G.c.id.desc()).limit(limit)
        if state is not None:
            query = query.where(_G.c.state == state)
        return [_graph_record(r, ()) for r in self.tx.conn.execute(query)]


def _graph_record(row: Any, jobs: Sequence[JobRecord]) -> GraphRecord:
    return GraphRecord(
        id=row.id, state=row.state, routing=row.routing, created_at=row.created_at,
        finished_at=row.finished_at, jobs_total=row.jobs_total, jobs_done=row.jobs_done,
        stalled_at=row.stalled_at, jobs=tuple(jobs),
    )
