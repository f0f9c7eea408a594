"""Limits on what users may submit, enforced before anything is written.

One rule each, used by both stores (so that SQLite and PostgreSQL refuse the same input
with the same line): the bounds of whole numbers, what a name may hold, what text in
args may hold, and how much of a value an error line quotes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from taskyard.core.json_text import CompactJson

INT_MAX = 2**31 - 1
"""The largest value of the stores' integer columns (PostgreSQL ``integer``)."""
ID_MAX = 2**63 - 1
"""The largest id (PostgreSQL ``bigint``, SQLite's integers)."""
PRIORITY_MAX = 1_000_000_000
"""Priorities run from -PRIORITY_MAX to PRIORITY_MAX: aging adds to a priority, and the
sum must still fit the column."""
COUNT_MAX = 1_000_000
"""Counts users set: retries, reruns, cost, capacity, worker losses, list limits."""
NAME_MAX = 200
QUOTE_MAX = 60
"""Characters of a value an error line quotes, at most."""
LINE_MAX = 1000
"""Characters of an error line, at most."""
_NOT_IN_NAMES = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NOT_IN_TEXT = re.compile(r"[\x00\ud800-\udfff]")


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


# One encoder for every call: json.dumps with options builds a new one each time (most of
# the encoding of small args, which a 100,000-task graph does 100,000 times).
_encode = CompactJson(allow_nan=False)


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
    if "\\u" in text:  # an escaped character: NUL and surrogates are escaped so
        check_args_text(args, where)
    size = len(text)  # ASCII only (non-ASCII characters are escaped): bytes = characters
    if size > limits.max_args_bytes:
        raise LimitError(
            f"{where}: args are {size} bytes encoded (limit {limits.max_args_bytes})"
        )
    return text


def too_deep(where: str, limits: Limits = DEFAULT_LIMITS) -> LimitError:
    """The error for args nested past the limit (also for a document so deep that
    reading it hit Python's recursion limit first)."""
    return LimitError(f"{where}: args nest more than {limits.max_nesting} levels deep "
                      f"(limit {limits.max_nesting})")


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
                raise too_deep(where, limits)
            if values > limits.max_args_bytes:
                raise LimitError(f"{where}: args hold more than {limits.max_args_bytes} "
                                 f"values: over the limit of {limits.max_args_bytes} bytes "
                                 "encoded")
        stack.extend((v, depth + 1) for v in children)
    return deepest


def quoted(value: object, limit: int = QUOTE_MAX) -> str:
    """``repr(value)`` for an error line, cut to ``limit`` characters with its length
    said (a 1 MB label is not echoed whole)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:limit - 1]}…{size}"


def one_line(message: str, limit: int = LINE_MAX) -> str:
    """An error message as one line of at most ``limit`` characters."""
    line = " ".join(message.split())
    return line if len(line) <= limit else f"{line[:limit - 1]}…"


def whole(value: object, field: str, *, minimum: int = 0, maximum: int = COUNT_MAX) -> int:
    """``value`` if it is a whole number within the bounds; else LimitError naming
    ``field`` and the bounds (every integer a user gives goes through one such check)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise LimitError(f"{field} must be a whole number")
    if not minimum <= value <= maximum:
        raise LimitError(f"{field} must be a whole number from {minimum} to {maximum}")
    return value


def check_name(value: object, field: str, *, max_length: int = NAME_MAX,
               empty: bool = False) -> str:
    """The rule for names, labels and routing keys: text of 1 to ``max_length``
    characters (0 with ``empty``) without control characters or lone surrogates."""
    if not isinstance(value, str):
        raise LimitError(f"{field} must be text")
    if not value and not empty:
        raise LimitError(f"{field} must not be empty")
    if len(value) > max_length:
        raise LimitError(f"{field} {quoted(value)} is longer than {max_length} characters")
    bad = _NOT_IN_NAMES.search(value)
    if bad:
        raise LimitError(f"{field} {quoted(value)} holds {_describe(bad.group())}: names "
                         "may not hold control characters or lone surrogates")
    return value


def check_text(value: str, field: str) -> str:
    """The rule for free text (handlers, descriptions, strings in args): no NUL
    character and no lone surrogate, which no shell command, environment variable or
    UTF-8 column can carry."""
    bad = _NOT_IN_TEXT.search(value)
    if bad:
        raise LimitError(f"{field} holds {_describe(bad.group())} (at character "
                         f"{bad.start()}): text may not hold NUL characters or lone "
                         "surrogates")
    return value


def _describe(char: str) -> str:
    return "a NUL character" if char == "\x00" else f"the character U+{ord(char):04X}"


def check_args_text(value: Any, where: str) -> None:
    """Every string of ``value`` (keys too) passes :func:`check_text`, walked without
    recursion (the nesting was checked first)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, f"{where}: args")
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
