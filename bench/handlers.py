"""Handlers used by the benchmarks (the same work for taskyard and its peers)."""

from __future__ import annotations

import time


def noop() -> None:
    return None


def stamp(path: str) -> float:
    """Record when the handler started: the first and last job of a W1 run bracket it."""
    now = time.time()
    with open(path, "w") as fh:
        fh.write(repr(now))
    return now
