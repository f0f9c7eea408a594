"""Task functions the Python API tests declare with ``@yard.task_type()`` and run in
real worker child processes."""

from __future__ import annotations

from typing import Any


def add(a: int, b: int) -> int:
    return a + b


def greet(name: str, *, punctuation: str = "!", **extra: Any) -> str:
    tail = "".join(f" {k}={v}" for k, v in sorted(extra.items()))
    return f"hello {name}{punctuation}{tail}"


def fail(reason: str) -> None:
    raise RuntimeError(reason)


def total(values: list[int]) -> int:
    return sum(values)


def positional_only(a: int, /) -> int:
    return a


def star_args(*values: int) -> int:
    return sum(values)
