"""Task graphs: atomic validated submission, live additions, cancel, reading."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from taskyard.core.graph import GraphError, GraphSpec, TaskNode, parse_graph
from taskyard.core.states import TERMINAL, JobState
from taskyard.core.substitution import references, substitute_ids
from taskyard.core.waits import Kind
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import GraphRecord, JobRecord, JobSubmission
from taskyard.store.driver.params import ReadGraphs, ReadJobs
from taskyard.store.portable.job_reads import mapped
from taskyard.store.schema.graph_rows import COLUMNS, definition_hash, gc_paused, graph_rows
from taskyard.store.schema.job_rows import attempt_record, to_record
from taskyard.store.transitions.dependents import Ended
from taskyard.store.transitions.events import graph_changed, job_exception, job_pending

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



class Graphs:
    """Task graphs in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'get', 'list'})
    """Methods a call through the store (``store.graphs.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def submit(self, doc: Mapping[str, Any], *, trace_context: str | None = None) -> int:
        """Validate the whole graph, then write it; returns its id. ``trace_context``:
        the W3C context its jobs carry (as stored, core/trace_context.py)."""
        with gc_paused():
            spec = self._parse(doc, existing=())
            graph_id = self.tx.driver.insert_graph(self.tx.raw, spec.routing, len(spec.tasks))
            self.tx.events.append([graph_changed(graph_id, "running", spec.routing)])
            self._write_tasks(graph_id, spec, existing={}, trace_context=trace_context)
        return graph_id

    def add_tasks(self, graph_id: int, doc: Mapping[str, Any], *,
                  trace_context: str | None = None) -> list[int]:
        """Add tasks to a graph; identical re-added labels are no-ops. Returns new job ids.
        ``trace_context``: as :meth:`submit`'s, for the new jobs."""
        driver, raw = self.tx.driver, self.tx.raw
        with gc_paused():
            found = driver.read_graphs(raw, ReadGraphs(graph_id))
            if not found:
                raise NotFound(f"no graph {graph_id}")
            graph = found[0]
            if graph["state"] == "canceled":
                raise Conflict(f"graph {graph_id} is canceled")
            existing = {label: (job, state, digest)
                        for label, job, state, digest in driver.lock_graph_jobs(raw, graph_id)}
            spec = self._parse({"routing": graph["routing"], **doc}, existing=existing)
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
            reopen = graph["state"] == "finished"
            driver.grow_graph(raw, graph_id, len(fresh), reopen)
            if reopen:
                self.tx.events.append([graph_changed(graph_id, "running", graph["routing"])])
            ids = self._write_tasks(graph_id, GraphSpec(spec.routing, fresh),
                                    existing={k: (v[0], v[1]) for k, v in existing.items()},
                                    trace_context=trace_context)
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
                known = self.tx.driver.task_type_names(
                    self.tx.raw, sorted(n for n in names if isinstance(n, str)))
            return name in known

        try:
            return parse_graph(doc, known_types=is_known, existing=existing,
                               limits=self.tx.store.limits)
        except GraphError as exc:
            raise InvalidInput(str(exc)) from None

    def _write_tasks(self, graph_id: int, spec: GraphSpec,
                     existing: Mapping[str, tuple[int, str]],
                     trace_context: str | None = None) -> list[int]:
        tx = self.tx
        specs = tx.task_types.by_name({n.type for n in spec.tasks.values() if n.type})
        columns: tuple[str, ...] = COLUMNS
        rows: Iterator[tuple[Any, ...]] = graph_rows(graph_id, spec, specs)
        if trace_context is not None:  # every job of the graph carries it
            columns = (*COLUMNS, "trace_context")
            rows = ((*row, trace_context) for row in rows)
        plan = None
        if any(ts.prerequisites for ts in specs.values()):
            # Update on launch applies to graph tasks too: a prerequisite is one more
            # parent of the task (outside the graph), spawned or reused as for a submit.
            plan = tx.prerequisites.plan([
                JobSubmission(type=node.type, args=node.args, priority=node.priority,
                              label=label, graph_id=graph_id, launch_type="graph")
                for label, node in spec.tasks.items()], specs)
        if plan is not None and (plan.spawn or plan.waits):
            ids = tx.jobs.insert_with_prerequisites(
                [dict(zip(columns, row, strict=True)) for row in rows], plan, specs)
        else:
            ids = tx.jobs.insert_rows(columns, rows, len(spec.tasks), announce=False)
            self.tx.events.append(
                job_pending(job_id, graph_id, f"{spec.routing or '_'}.{node.routing or '_'}",
                            type=node.type)
                for job_id, node in zip(ids, spec.tasks.values(), strict=True)
                if not node.requires and node.kind == Kind.TASK)
        id_of = dict(zip(spec.tasks, ids, strict=True))
        id_of.update({label: pair[0] for label, pair in existing.items()})
        # $subs needs every id, known only now: rewrite the args that use it.
        rewrites = [
            (id_of[label], json.dumps(substitute_ids(node.args, id_of), sort_keys=True,
                                      separators=(",", ":")))
            for label, node in spec.tasks.items()
            if '"$' in node.args_text and references(node.args)
        ]
        if rewrites:
            tx.driver.rewrite_args(tx.raw, rewrites)
        tx.driver.insert_edges(tx.raw, [(id_of[label], id_of[e.label], e.on)
                            for label, node in spec.tasks.items() for e in node.requires])
        # Approvals, waits and sleeps without parents await from now on.
        awaiting = [job_id for job_id, node in zip(ids, spec.tasks.values(), strict=True)
                    if node.kind != Kind.TASK and not node.requires]
        if awaiting:
            signaled = tx.waits.started(awaiting)
            if signaled:
                tx.dependents.jobs_ended(signaled)
        # Edges to tasks that already ended (add-tasks) resolve now.
        done = [Ended(job_id, JobState(state), graph_id)
                for job_id, state in existing.values() if state in TERMINAL]
        if done:
            fresh_ids = set(ids)
            ended = tx.dependents.propagate(done, only=fresh_ids)
            if ended:
                tx.dependents.jobs_ended(ended)
        tx.notify("scheduler")
        # The events now, while collection is paused (a large graph has many).
        tx.events.flush()
        return ids

    def get(self, graph_id: int, *, jobs: bool = True) -> GraphRecord:
        """The graph, with its jobs unless ``jobs`` is False; NotFound if missing."""
        found = self.tx.driver.read_graphs(self.tx.raw, ReadGraphs(graph_id))
        if not found:
            raise NotFound(f"no graph {graph_id}")
        members: Sequence[JobRecord] = self._graph_jobs(graph_id) if jobs else ()
        return _graph_record(found[0], members)

    def _graph_jobs(self, graph_id: int) -> list[JobRecord]:
        driver, raw = self.tx.driver, self.tx.raw
        tries: dict[int, list[Any]] = {}
        for attempt in driver.read_job_attempts(raw, graph_id=graph_id):
            tries.setdefault(attempt["job_id"], []).append(attempt_record(mapped(attempt)))
        return [to_record(mapped(r), tries.get(r["id"], ()))
                for r in driver.read_jobs(raw, ReadJobs(graph_id=graph_id))]

    def cancel(self, graph_id: int) -> GraphRecord:
        """Cancel every unfinished job (running ones are stopped by their workers)."""
        driver, raw = self.tx.driver, self.tx.raw
        found = driver.read_graphs(raw, ReadGraphs(graph_id))
        if not found:
            raise NotFound(f"no graph {graph_id}")
        graph = found[0]
        if graph["state"] in ("canceled", "finished"):
            raise Conflict(f"graph {graph_id} is already {graph['state']}")
        self.tx.dependents.set_graph_state(graph_id, "canceled", graph["routing"], {})
        workers, rows = driver.cancel_graph_jobs(raw, graph_id)
        self.tx.events.append([job_exception(job, graph_id, routing, "graph canceled")
                               for job, _, routing in rows])
        # Jobs outside the graph may wait on these (a prerequisite reused by a later
        # launch): they must end too, never wait forever.
        self.tx.dependents.jobs_ended([Ended(job, JobState.CANCELED, graph_id)
                                       for job, _, _ in rows])
        self.tx.notify("scheduler", *(f"worker.{w}" for w in sorted(workers)))
        return self.get(graph_id)

    def list(self, *, state: str | None = None, limit: int = 100) -> list[GraphRecord]:
        return [_graph_record(r, ()) for r in self.tx.driver.read_graphs(
            self.tx.raw, ReadGraphs(state=state, limit=limit))]


def _graph_record(row: Mapping[str, Any], jobs: Sequence[JobRecord]) -> GraphRecord:
    return GraphRecord(
        id=row["id"], state=row["state"], routing=row["routing"],
        created_at=row["created_at"], finished_at=row["finished_at"],
        jobs_total=row["jobs_total"], jobs_done=row["jobs_done"],
        stalled_at=row["stalled_at"], jobs=tuple(jobs),
    )
