"""Task graphs (TaskCluster's format): parsing, validation, substitution.

Everything here is pure: the store calls :func:`parse_graph` before it writes
anything, so a bad graph is rejected whole with a message naming the culprit.
Cycle detection is iterative so that a 100,000-task chain cannot hit Python's
recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from taskyard.core.durations import DurationError, parse_duration
from taskyard.core.limits import (
    DEFAULT_LIMITS,
    PRIORITY_MAX,
    LimitError,
    Limits,
    check_name,
    encode_args,
    quoted,
    whole,
)
from taskyard.core.substitution import SubstitutionError, references, result_references
from taskyard.core.waits import WAIT_KINDS, Kind, WaitError, parse_wait

CONDITIONS = ("success", "failure", "always")
REQUIRES_MODES = {"all-completed": "success", "all-resolved": "always"}
MAX_ROUTING = 99  # graph + job routing are stored together in a 200-character column
_TASK_KEYS = {
    "type", "args", "requires", "reruns", "priority", "pools", "routing", "requires_mode",
    "convergence", "locks", "timeout", *WAIT_KINDS,
}
_PLAIN_KEYS = {"type", "args", "requires", "requires_mode"}
_WAIT_KEYS = {"requires", "requires_mode", "convergence", "routing"}
"""What an approval, a wait or a sleep takes besides its own key (it runs no handler)."""


class GraphError(ValueError):
    """A graph rejected before anything was written; the message names the culprit."""


class Edge(NamedTuple):
    """``label`` must resolve; the dependent runs when its ``on`` condition holds.
    (A named tuple: immutable, and ~3x cheaper to build than a frozen dataclass,
    which counts at 300,000 edges.)"""

    label: str
    on: str = "success"


@dataclass(frozen=True, slots=True)
class TaskNode:
    label: str
    type: str
    args: dict[str, Any] = field(default_factory=dict)
    requires: tuple[Edge, ...] = ()
    reruns: int | None = None
    priority: int = 0
    pools: tuple[str, ...] | None = None
    routing: str = ""
    convergence: str = "all"
    locks: tuple[str, ...] = ()
    timeout: float | None = None
    """Per attempt; an approval's or a wait's timeout; a sleep's duration."""
    args_text: str = "{}"
    """``args`` as stored: checked against the limits and encoded once."""
    kind: str = Kind.TASK
    """``task`` (``type`` names its task type), or approval, wait, sleep (``type`` is "")."""
    signal: str | None = None
    key: str | None = None
    """The signal a ``wait`` waits for, and its key (None: any key)."""

    def definition(self) -> dict[str, Any]:
        """A canonical form, to tell an identical re-added task from a changed one."""
        return {
            "type": self.type, "args": self.args,
            "requires": [(e.label, e.on) for e in self.requires], "reruns": self.reruns,
            "priority": self.priority, "pools": self.pools, "routing": self.routing,
            "convergence": self.convergence, "locks": self.locks, "timeout": self.timeout,
            **({} if self.kind == Kind.TASK else {"wait": [self.kind, self.signal, self.key]}),
        }


@dataclass(frozen=True, slots=True)
class GraphSpec:
    routing: str
    tasks: dict[str, TaskNode]


def parse_graph(
    doc: Any,
    *,
    known_types: Callable[[str], bool],
    existing: Iterable[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    require_routing_ok: bool = True,
) -> GraphSpec:
    """Validate a graph document; ``existing`` labels may be required (add-tasks)."""
    if not isinstance(doc, Mapping):
        raise GraphError("graph: the document must be a mapping with a 'tasks' key")
    unknown = set(doc) - {"routing", "tasks"}
    if unknown:
        raise GraphError(f"graph: unknown keys {sorted(unknown)} (expected routing, tasks)")
    routing = doc.get("routing", "") or ""
    if require_routing_ok:
        _check_routing(routing, "graph routing")
    tasks = doc.get("tasks")
    if not isinstance(tasks, Mapping) or not tasks:
        raise GraphError("graph: 'tasks' must map at least one label to a task")
    if len(tasks) > limits.max_graph_tasks:
        raise GraphError(f"graph: {len(tasks)} tasks (limit {limits.max_graph_tasks})")
    nodes = {}
    for raw_label, body in tasks.items():
        label = raw_label if type(raw_label) is str else str(raw_label)
        nodes[label] = _parse_task(label, body, limits)
    unknown_types = {n for n in {node.type for node in nodes.values() if node.type}
                     if not known_types(n)}
    position = {label: index for index, label in enumerate(nodes)}
    outside = set(existing)
    ordered = True  # every parent comes before its child: then there is no cycle
    for index, node in enumerate(nodes.values()):
        if node.type in unknown_types:
            raise GraphError(f"task {node.label!r}: unknown task type {node.type!r}")
        for edge in node.requires:
            at = position.get(edge.label)
            if at is None:
                if edge.label not in outside:
                    raise GraphError(
                        f"task {node.label!r}: requires unknown label {quoted(edge.label)}")
            elif at >= index:
                ordered = False
        if '"$' not in node.args_text:
            continue  # no substitution marker anywhere in its args
        try:
            named = references(node.args)
        except SubstitutionError as exc:
            raise GraphError(str(exc)) from None
        for ref in named:
            if ref not in position and ref not in outside:
                raise GraphError(f"task {node.label!r}: refers to unknown label {quoted(ref)}")
        for ref in result_references(node.args):
            if ref not in position and ref not in outside:
                raise GraphError(
                    f"task {node.label!r}: $result of unknown label {quoted(ref)}")
            if ref not in {e.label for e in node.requires}:
                raise GraphError(
                    f"task {node.label!r}: $result of {ref!r} needs {ref!r} in its requires"
                )
    if not ordered:
        cycle = find_cycle({label: [e.label for e in n.requires] for label, n in nodes.items()})
        if cycle:
            raise GraphError(f"graph: cycle {cycle_text(cycle)}")
    return GraphSpec(routing, nodes)


def _parse_task(label: str, body: Any, limits: Limits) -> TaskNode:
    # Runs once per task (100,000 in a large graph): absent keys cost one lookup each.
    try:
        if "." in check_name(label, "label"):
            raise LimitError(label)
    except LimitError:
        raise GraphError(f"task {quoted(label)}: a label is 1-200 characters without dots "
                         "or control characters") from None
    if type(body) is not dict and not isinstance(body, Mapping):
        raise GraphError(f"task {label!r}: must be a mapping with at least 'type'")
    if not _TASK_KEYS.issuperset(body):
        raise GraphError(f"task {label!r}: unknown keys {sorted(set(body) - _TASK_KEYS)}")
    get = body.get
    type_ = get("type")
    if type_ is None or not body.keys().isdisjoint(WAIT_KINDS):
        return _parse_wait_task(label, body)
    if not isinstance(type_, str) or not type_:
        raise GraphError(f"task {label!r}: 'type' must name a task type")
    _check(check_name, type_, f"task {label!r}: type")
    args = get("args") or {}
    if type(args) is dict and not args:
        args_text = "{}"
    else:
        try:
            args_text = encode_args(args, where=f"task {label!r}", limits=limits)
        except LimitError as exc:
            raise GraphError(str(exc)) from None
    requires = _requires_of(label, body)
    if _PLAIN_KEYS.issuperset(body):  # every other field takes its default
        return TaskNode(label, type_, dict(args), requires, args_text=args_text)
    return _parse_options(label, body, type_=type_, args=dict(args), requires=requires,
                          args_text=args_text)


def _requires_of(label: str, body: Mapping[str, Any]) -> tuple[Edge, ...]:
    mode = body.get("requires_mode")
    raw_requires = body.get("requires")
    if mode is None and not raw_requires:
        return ()
    if mode is not None and mode not in REQUIRES_MODES:
        raise GraphError(
            f"task {label!r}: requires_mode must be one of {sorted(REQUIRES_MODES)}")
    return _parse_requires(f"task {label!r}", raw_requires or [], mode)


def _parse_wait_task(label: str, body: Mapping[str, Any]) -> TaskNode:
    """An approval, a wait or a sleep: exactly one of them (and no type); besides, only
    requires, requires_mode, convergence and routing apply (it runs no handler)."""
    where = f"task {label!r}"
    kinds = [kind for kind in (*WAIT_KINDS, "type") if kind in body]
    if not kinds:
        raise GraphError(f"{where}: 'type' must name a task type (or give approval, wait "
                         "or sleep instead)")
    if len(kinds) != 1:
        raise GraphError(f"{where}: give exactly one of type, approval, wait or sleep "
                         f"(it has {', '.join(kinds)})")
    kind = Kind(kinds[0])
    extra = set(body) - _WAIT_KEYS - {kind}
    if extra:
        raise GraphError(f"{where}: {', '.join(sorted(extra))} do not apply to "
                         f"{'an' if kind is Kind.APPROVAL else 'a'} {kind} "
                         "(it runs no handler); it takes requires, requires_mode, "
                         "convergence and routing")
    try:
        spec = parse_wait(where, kind, body[kind])
    except WaitError as exc:
        raise GraphError(str(exc)) from None
    routing = body.get("routing", "") or ""
    _check_routing(routing, f"{where} routing")
    convergence = body.get("convergence", "all")
    if convergence not in ("all", "any"):
        raise GraphError(f"{where}: convergence must be 'all' or 'any'")
    return TaskNode(label, "", {}, _requires_of(label, body), routing=routing,
                    convergence=convergence, timeout=spec.timeout, kind=kind,
                    signal=spec.signal, key=spec.key)


def _parse_options(label: str, body: Mapping[str, Any], *, type_: str, args: dict[str, Any],
                   requires: tuple[Edge, ...], args_text: str) -> TaskNode:
    """The rest of a task that sets more than type, args and requires."""
    where = f"task {label!r}"
    reruns = body.get("reruns")
    if reruns is not None:
        _check(whole, reruns, f"{where}: reruns")
    priority = body.get("priority", 0)
    _check(whole, priority, f"{where}: priority", minimum=-PRIORITY_MAX, maximum=PRIORITY_MAX)
    pools = body.get("pools")
    if pools is not None and (not isinstance(pools, list) or not pools
                              or not all(isinstance(p, str) and p for p in pools)):
        raise GraphError(f"{where}: pools must be a non-empty list of names")
    for pool in pools or ():
        _check(check_name, pool, f"{where}: pool name")
    routing = body.get("routing", "") or ""
    _check_routing(routing, f"{where} routing")
    convergence = body.get("convergence", "all")
    if convergence not in ("all", "any"):
        raise GraphError(f"{where}: convergence must be 'all' or 'any'")
    locks = body.get("locks", []) or []
    if not isinstance(locks, list) or not all(isinstance(x, str) and x for x in locks):
        raise GraphError(f"{where}: locks must be a list of lock names")
    for lock in locks:
        _check(check_name, lock, f"{where}: lock")
    return TaskNode(label, type_, args, requires, reruns, priority,
                    tuple(pools) if pools else None, routing, convergence, tuple(locks),
                    _parse_timeout(where, body.get("timeout")), args_text)


def _parse_timeout(where: str, raw: Any) -> float | None:
    """Seconds from a number or a duration string (``90``, ``90s``, ``5m``, ``2h``, ``1d``)."""
    if raw is None:
        return None
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        raise GraphError(f"{where}: timeout must be a duration like 90, 90s, 5m, 2h or 1d")
    try:
        seconds = parse_duration(raw, field="timeout")
    except DurationError as exc:
        raise GraphError(f"{where}: {exc}") from None
    if seconds <= 0:
        raise GraphError(f"{where}: timeout must be more than 0 seconds")
    return seconds


def _parse_requires(where: str, raw: Any, mode: str | None) -> tuple[Edge, ...]:
    if not isinstance(raw, list):
        raise GraphError(f"{where}: requires must be a list of labels")
    default_on = REQUIRES_MODES[mode] if mode else "success"
    # The usual form: plain labels, each once.
    if set(map(type, raw)) == {str} and len(set(raw)) == len(raw):
        return tuple(map(Edge, raw, repeat(default_on)))
    edges: dict[str, Edge] = {}
    for raw_entry in raw:
        entry = raw_entry
        if isinstance(entry, str):
            edge = Edge(entry, default_on)
        elif isinstance(entry, Mapping):
            if True in entry and "on" not in entry:
                # YAML 1.1 reads an unquoted `on:` key as the boolean true.
                entry = {("on" if k is True else k): v for k, v in entry.items()}
            extra = set(entry) - {"label", "on"}
            if extra or not isinstance(entry.get("label"), str):
                raise GraphError(f"{where}: a requires entry is a label or {{label, on}}")
            on = entry.get("on", default_on)
            if on not in CONDITIONS:
                raise GraphError(
                    f"{where}: requires {entry['label']!r} has on={on!r}; "
                    f"use one of {', '.join(CONDITIONS)}"
                )
            edge = Edge(entry["label"], on)
        else:
            raise GraphError(f"{where}: a requires entry is a label or {{label, on}}")
        if edge.label in edges:
            raise GraphError(f"{where}: requires {edge.label!r} twice")
        edges[edge.label] = edge
    return tuple(edges.values())


def _check_routing(routing: Any, where: str) -> None:
    if not isinstance(routing, str) or len(routing) > MAX_ROUTING:
        raise GraphError(f"{where}: must be text of at most {MAX_ROUTING} characters")
    _check(check_name, routing, where, empty=True)


def _check(rule: Callable[..., Any], value: Any, field: str, **bounds: int | bool) -> None:
    """A rule of :mod:`taskyard.core.limits` whose refusal is a GraphError."""
    try:
        rule(value, field, **bounds)
    except LimitError as exc:
        raise GraphError(str(exc)) from None


def cycle_text(cycle: list[str], most: int = 8) -> str:
    """A cycle's labels in order, the middle left out of a long one (one short line)."""
    shown = cycle if len(cycle) <= most else [*cycle[: most // 2], "…",
                                               *cycle[-(most // 2):]]
    text = " -> ".join(label if len(label) <= 40 else quoted(label, 40) for label in shown)
    return text if shown is cycle else f"of {len(cycle) - 1} tasks, {text}"


def find_cycle(requires: Mapping[str, list[str]]) -> list[str] | None:
    """A cycle as labels in order (first repeated at the end), or None. Iterative DFS."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(requires, white)
    for root in requires:
        if color[root] != white:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        color[root] = grey
        while stack:
            node, index = stack[-1]
            parents = requires.get(node, [])
            if index < len(parents):
                stack[-1] = (node, index + 1)
                nxt = parents[index]
                state = color.get(nxt, black)  # labels outside this graph cannot loop back
                if state == grey:
                    start = path.index(nxt)
                    # Report in dependency order: each label requires the one before it.
                    loop = [*path[start:], nxt]
                    return list(reversed(loop))
                if state == white:
                    color[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = black
                stack.pop()
                path.pop()
    return None
