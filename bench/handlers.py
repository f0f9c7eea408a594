"""No-op handlers used by the benchmarks."""

from __future__ import annotations


def noop() -> None:
    return None
