"""The ``waits`` section of a scenario: when its graphs' approvals and waits are decided.

By the task's label, else by the signal a wait expects, else by its kind (``approval``,
``wait``)::

    waits:
      approval: {after: {lognormal: {median: 20m, sigma: 1}}, deny: 0.05}
      deploy-ready: {after: {exponential: 10m}}

A sleep needs none: it lasts its duration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskyard.core.graph import GraphSpec, TaskNode
from taskyard.core.waits import Kind
from taskyard.sim.distributions import DurationSpec, parse_duration_spec
from taskyard.sim.fields import ScenarioError, known_keys, mapping, probability


@dataclass(frozen=True, slots=True)
class WaitBehaviour:
    """When an awaiting approval or wait is decided, and how often an approval is
    denied."""

    after: DurationSpec
    deny: float = 0.0


def parse_waits(value: Any) -> dict[str, WaitBehaviour]:
    """The scenario's ``waits`` section (see the module docstring)."""
    found: dict[str, WaitBehaviour] = {}
    for key, raw in mapping(value or {}, "waits").items():
        where = f"waits.{key}"
        body = mapping(raw, where)
        known_keys(body, {"after", "deny"}, where)
        if "after" not in body:
            raise ScenarioError(f"{where}.after: required (when it is decided)")
        found[str(key)] = WaitBehaviour(parse_duration_spec(body["after"], f"{where}.after"),
                                        probability(body.get("deny", 0.0), f"{where}.deny"))
    return found


def behaviour_of(node: TaskNode, waits: Mapping[str, WaitBehaviour]) -> WaitBehaviour | None:
    """The behaviour of an approval or a wait: by its label, its signal, its kind."""
    for key in (node.label, node.signal, node.kind):
        if key is not None and key in waits:
            return waits[key]
    return None


def check_graph(spec: GraphSpec, waits: Mapping[str, WaitBehaviour], where: str) -> None:
    """Every approval and wait of a graph arrival has a behaviour (a sleep needs none)."""
    for node in spec.tasks.values():
        if node.kind in (Kind.APPROVAL, Kind.WAIT) and behaviour_of(node, waits) is None:
            keys = ", ".join(f"waits.{k}" for k in (node.label, node.signal, node.kind) if k)
            raise ScenarioError(f"{where}: task {node.label!r} is {node.kind} that nothing "
                                f"decides: give {keys}")
