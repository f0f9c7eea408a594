"""Limits on what users may submit, enforced before anything is written."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any


class LimitError(ValueError):
    """Input over a limit, or not the JSON it must be; the message names the field."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Configurable bounds on submissions."""

    max_args_bytes: int = 256 * 1024
    max_nesting: int = 64
    max_graph_tasks: int = 100_000


DEFAULT_LIMITS = Limits()
_ENV = {
    "TASKYARD_MAX_ARGS_BYTES": "max_args_bytes",
    "TASKYARD_MAX_NESTING": "max_nesting",
    "TASKYARD_MAX_GRAPH_TASKS": "max_graph_tasks",
}


def limits_from_env(environ: Mapping[str, str]) -> Limits:
    """The limits, each overridable by its ``TASKYARD_MAX_…`` variable (a positive whole
    number); LimitError names a variable that is not one."""
    values: dict[str, int] = {}
    for variable, name in _ENV.items():
        text = environ.get(variable)
        if text is None or not text.strip():
            continue
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise LimitError(f"{variable}={text!r}: must be a whole number > 0")
        values[name] = value
    return Limits(**values)


# One encoder for every call: json.dumps with options builds a new one each time (~20% of
# the encoding of small args, which a 100,000-task graph does 100,000 times).
_encode = json.JSONEncoder(separators=(",", ":"), sort_keys=True, allow_nan=False).encode


def encode_args(args: Any, *, where: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """Check ``args`` (an object of JSON values) against the limits and encode it."""
    if not isinstance(args, dict):
        raise LimitError(f"{where}: args must be a JSON object, got {type(args).__name__}")
    # Flat args (the usual) nest one level: no need to walk them.
    if any(isinstance(v, dict | list) for v in args.values()):
        nesting_depth(args, limits=limits, where=where)
    try:
        text = _encode(args)
    except (TypeError, ValueError) as exc:
        raise LimitError(f"{where}: args are not JSON: {exc}") from None
    size = len(text)  # ASCII only (non-ASCII characters are escaped): bytes = characters
    if size > limits.max_args_bytes:
        raise LimitError(
            f"{where}: args are {size} bytes encoded (limit {limits.max_args_bytes})"
        )
    return text


def nesting_depth(value: Any, *, limits: Limits | None = None, where: str = "value") -> int:
    """Depth of nested lists/objects, computed without recursion.

    With ``limits``, the walk stops at the first one passed (LimitError): deeper than
    ``max_nesting``, or more values than ``max_args_bytes`` (each takes a byte at least
    once encoded). A value that contains itself, or repeats its parts by reference
    (YAML aliases: a 1 kB file can hold 10^9 values), is so refused in a time bounded
    by the limits, where encoding it would never end."""
    deepest = 0
    values = 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Collection[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        values += len(children)
        if limits is not None:
            if depth > limits.max_nesting:
                raise LimitError(f"{where}: args nest more than {limits.max_nesting} levels "
                                 f"deep (limit {limits.max_nesting})")
            if values > limits.max_args_bytes:
                raise LimitError(f"{where}: args hold more than {limits.max_args_bytes} "
                                 f"values: over the limit of {limits.max_args_bytes} bytes "
                                 "encoded")
        stack.extend((v, depth + 1) for v in children)
    return deepest
