"""Handlers used by the benchmarks (the same work for taskyard and its peers)."""

from __future__ import annotations

import os
import time


def noop() -> None:
    return None


def stamp(path: str) -> float:
    """Record when the handler started: the first and last job of a W1 run bracket it."""
    now = time.time()
    with open(path, "w") as fh:
        fh.write(repr(now))
    return now


def record(label: str, out: str, *_: object, final: bool = False) -> None:
    """W4 graph node: append ``label start end`` (epoch seconds, taken in the handler) to
    this process's file in ``out``. Every system's hand-off delays come from these files.
    Extra positional arguments (a chord callback's results) are ignored; the ``final``
    node also leaves ``LABEL.done``, which ends a peer's run."""
    start = time.time()
    end = time.time()
    with open(os.path.join(out, f"{os.getpid()}.rec"), "a") as fh:
        fh.write(f"{label} {start!r} {end!r}\n")
    if final:
        with open(os.path.join(out, f"{label}.done"), "w") as fh:
            fh.write(repr(end))
