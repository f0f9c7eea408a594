"""Random quantities of a scenario: how long attempts take, and the args and priorities
of arriving jobs. All draws come from the simulation's one seeded generator, in event
order, so a seed gives one run."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskyard.sim.fields import ScenarioError, duration, integer, mapping, number

_DURATION_KINDS = ("exponential", "uniform", "lognormal", "arg")
DURATION_HELP = ("a duration (30s), {exponential: MEAN}, {uniform: [LOW, HIGH]}, "
                 "{lognormal: {median: M, sigma: S}} or {arg: NAME}")


@dataclass(frozen=True, slots=True)
class DurationSpec:
    """How long an attempt of a task type runs."""

    kind: str
    """``constant``, ``exponential`` (mean ``a``), ``uniform`` (``a``-``b``),
    ``lognormal`` (median ``a``, sigma ``b``) or ``arg`` (the job's arg ``arg``)."""
    a: float = 0.0
    b: float = 0.0
    arg: str = ""
    mu: float = 0.0
    """``lognormal``: log of the median (the normal's mean), computed once."""

    def sample(self, rng: random.Random, args: Mapping[str, Any]) -> float:
        kind = self.kind
        if kind == "constant":
            return self.a
        if kind == "exponential":
            return rng.expovariate(1.0 / self.a) if self.a > 0 else 0.0
        if kind == "uniform":
            return rng.uniform(self.a, self.b)
        if kind == "lognormal":
            return math.exp(rng.gauss(self.mu, self.b))
        return duration(args.get(self.arg), f"args.{self.arg}")


def parse_duration_spec(value: Any, where: str) -> DurationSpec:
    """A duration distribution; see :data:`DURATION_HELP`."""
    if not isinstance(value, Mapping):
        return DurationSpec("constant", duration(value, where))
    if len(value) != 1 or next(iter(value)) not in _DURATION_KINDS:
        raise ScenarioError(f"{where}: must be {DURATION_HELP}")
    kind, body = next(iter(value.items()))
    at = f"{where}.{kind}"
    if kind == "exponential":
        return DurationSpec(kind, duration(body, at))
    if kind == "uniform":
        if not isinstance(body, list) or len(body) != 2:
            raise ScenarioError(f"{at}: must be [LOW, HIGH]")
        low, high = duration(body[0], f"{at}[0]"), duration(body[1], f"{at}[1]")
        if high < low:
            raise ScenarioError(f"{at}: HIGH must be >= LOW")
        return DurationSpec(kind, low, high)
    if kind == "lognormal":
        body = mapping(body, at)
        if set(body) != {"median", "sigma"}:
            raise ScenarioError(f"{at}: must be {{median: DURATION, sigma: NUMBER}}")
        median = duration(body["median"], f"{at}.median", positive=True)
        return DurationSpec(kind, median, number(body["sigma"], f"{at}.sigma"),
                            mu=math.log(median))
    if not isinstance(body, str) or not body:
        raise ScenarioError(f"{at}: must name one of the job's args")
    return DurationSpec(kind, arg=body)


@dataclass(frozen=True, slots=True)
class ValueSpec:
    """An arg value or a priority: fixed, one of a list (repeat an item to weigh it),
    or an integer drawn from an inclusive range."""

    fixed: Any = None
    choices: tuple[Any, ...] = ()
    low: int = 0
    high: int = -1

    @property
    def is_fixed(self) -> bool:
        return not self.choices and self.high < self.low

    def sample(self, rng: random.Random) -> Any:
        if self.choices:
            return self.choices[int(rng.random() * len(self.choices))]
        if self.high >= self.low:
            # random() scaled: randint's rejection sampling costs 5x more, for a bias
            # below 2**-40 on any range a scenario uses.
            return self.low + int(rng.random() * (self.high - self.low + 1))
        return self.fixed


def parse_value(value: Any, where: str, *, whole: bool = False) -> ValueSpec:
    """``VALUE``, ``{one_of: [...]}`` or ``{range: [LOW, HIGH]}``; ``whole``: integers
    only (priorities)."""
    if isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in (
            "one_of", "range"):
        kind, body = next(iter(value.items()))
        at = f"{where}.{kind}"
        if kind == "one_of":
            if not isinstance(body, list) or not body:
                raise ScenarioError(f"{at}: must be a non-empty list")
            if whole:
                for n, item in enumerate(body):
                    integer(item, f"{at}[{n}]")
            return ValueSpec(choices=tuple(body))
        if not isinstance(body, list) or len(body) != 2:
            raise ScenarioError(f"{at}: must be [LOW, HIGH]")
        low, high = integer(body[0], f"{at}[0]"), integer(body[1], f"{at}[1]")
        if high < low:
            raise ScenarioError(f"{at}: HIGH must be >= LOW")
        return ValueSpec(low=low, high=high)
    if whole:
        integer(value, where)
    return ValueSpec(fixed=value)


@dataclass(frozen=True, slots=True)
class ArgsSpec:
    """The args of arriving jobs, drawn per job."""

    values: tuple[tuple[str, ValueSpec], ...] = ()
    shared: dict[str, Any] | None = None
    """When every value is fixed: the one dict all jobs share (never mutated)."""

    def sample(self, rng: random.Random) -> dict[str, Any]:
        if self.shared is not None:
            return self.shared
        return {name: spec.sample(rng) for name, spec in self.values}

    def names(self) -> set[str]:
        return {name for name, _ in self.values}


def parse_args(value: Any, where: str) -> ArgsSpec:
    if value is None:
        return ArgsSpec(shared={})
    body = mapping(value, where)
    values = tuple((str(k), parse_value(v, f"{where}.{k}")) for k, v in body.items())
    fixed = all(spec.is_fixed for _, spec in values)
    return ArgsSpec(values, {name: spec.fixed for name, spec in values} if fixed else None)
