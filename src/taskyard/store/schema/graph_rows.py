"""Task graphs as rows: each task's job row, built as tuples (the per-type part once,
the per-task part per task), and the canonical definition whose hash tells whether a
re-added task is the same."""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from taskyard.core.graph import CONDITIONS, Edge, GraphSpec, TaskNode
from taskyard.core.handlers import HandlerSpecError, check_shell_job
from taskyard.core.locks import LockTemplateError
from taskyard.core.rate_limits import RateLimitError
from taskyard.core.states import JobState
from taskyard.core.waits import Kind
from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.store.schema.job_rows import locks_text, pools_text, rate_key_of

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
    text = ('{"args":' + node.args_text + "," + _head(node.convergence, node.locks, node.pools,
                                                      node.priority)
            + ',"requires":' + _requires_text(node.requires) + ","
            + _tail(node.reruns, node.routing, node.timeout, node.type))
    if node.kind == Kind.TASK:
        return text
    return f'{text[:-1]},"wait":{_canonical([node.kind, node.signal, node.key])}}}'



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
    "convergence", "definition_hash", "rate_key", "kind", "signal_name", "signal_key",
)
"""The columns of :func:`graph_rows`' tuples, in their order: :func:`job_row`'s keys that a
graph's task sets, and a wait's (``kind``, ``signal_name``, ``signal_key``). No
``delayed_until``: a graph's task has no ``run_after`` (a sleep waits instead)."""


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
        routing = routings.get(node.routing)
        if routing is None:
            # Stored as "<graph routing>.<job routing>": the tail of its events' keys.
            routing = routings[node.routing] = f"{spec.routing or '_'}.{node.routing or '_'}"
        if node.kind != Kind.TASK:
            yield _wait_row(graph_id, label, node, routing)
            continue
        ts = specs[node.type]
        cost, retries, delay, backoff, max_delay, losses, timeout, pools = types[node.type]
        try:
            locks = locks_text(ts, node.args, node.locks)
            rate_key = rate_key_of(ts, node.args)
            if ts.handler.startswith("shell:"):
                check_shell_job(ts.handler[6:], node.args, node.args_text)
        except (LockTemplateError, RateLimitError, HandlerSpecError) as exc:
            raise InvalidInput(f"task {label!r}: {exc}") from None
        yield (
            node.type, node.args_text, node.priority,
            pools if node.pools is None else pools_text(node.pools), cost, locks,
            retries if node.reruns is None else node.reruns, delay, backoff, max_delay,
            losses, timeout if node.timeout is None else node.timeout, None, label, graph_id,
            routing, "graph", None, None,
            JobState.WAITING if node.requires else JobState.PENDING, len(node.requires),
            node.convergence, definition_hash(node), rate_key, Kind.TASK.value, None, None,
        )


_NO_POOLS = pools_text(())


def _wait_row(graph_id: int, label: str, node: TaskNode, routing: str) -> tuple[Any, ...]:
    """An approval's, a wait's or a sleep's row: no task type, cost, pools or locks; its
    timeout (a sleep's duration) in ``timeout``; awaiting at once without parents."""
    return (
        None, "{}", node.priority, _NO_POOLS, 0, "[]", 0, 0.0, 1.0, 3600.0, 3, node.timeout,
        None, label, graph_id, routing, "graph", None, None,
        JobState.WAITING if node.requires else JobState.AWAITING, len(node.requires),
        node.convergence, definition_hash(node), None, node.kind, node.signal, node.key,
    )
