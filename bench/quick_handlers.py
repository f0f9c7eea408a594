"""Handlers for latency measurements."""

from __future__ import annotations

import time


def stamp() -> float:
    """Return the time the handler started (epoch seconds)."""
    return time.time()
