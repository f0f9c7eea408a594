"""Handlers for the recurring-work example (docs/recurring.md).

``check`` plays a Software Heritage lister: it looks at a source and reports
whether anything changed since its last visit. The "source" is a local file so
the example runs offline: append a line to it and the next visit is eventful.
taskyard then shortens the schedule's interval; visits that find nothing
lengthen it, within the task type's [min, max].
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

STATE = Path(".feed-state")


def check(feed: str) -> dict[str, Any]:
    """Visit ``feed`` (a file path); eventful when its content changed since last time."""
    source = Path(feed)
    digest = hashlib.sha256(source.read_bytes() if source.exists() else b"").hexdigest()
    STATE.mkdir(exist_ok=True)
    seen = STATE / (hashlib.sha256(feed.encode()).hexdigest()[:16] + ".seen")
    eventful = not seen.exists() or seen.read_text() != digest
    seen.write_text(digest)
    return {"eventful": eventful, "feed": feed}


def report(day: str = "today") -> str:
    """The nightly cron job of the example: anything that returns JSON will do."""
    return f"report for {day} written"
