"""Printing for the CLI: aligned tables (rich) for people, ``--json`` for scripts."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click

from taskyard.core.durations import iso

# (unit, its length in seconds, the distance from which it is used): past 45
# seconds people say "a minute", past 22 hours "a day" (moment.js's thresholds).
_UNITS = (("year", 365 * 86400.0, 320 * 86400.0), ("month", 30 * 86400.0, 26 * 86400.0),
          ("day", 86400.0, 22 * 3600.0), ("hour", 3600.0, 45 * 60.0),
          ("minute", 60.0, 45.0), ("second", 1.0, 1.0))

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *,
                empty: str = "nothing to show") -> None:
    """An aligned table; wide enough for pipes, fitted to the terminal otherwise."""
    from rich.console import Console  # noqa: PLC0415 - rich is slow to import
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    rows = list(rows)
    if not rows:
        click.echo(empty)
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in headers:
        table.add_column(header.upper(), overflow="fold")
    for row in rows:  # as text: no markup, no control character reaches the terminal
        table.add_row(*(Text("" if v is None else printable(str(v))) for v in row))
    Console(file=sys.stdout, width=None if sys.stdout.isatty() else 220,
            highlight=False).print(table)


def duration(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return ""
    seconds = end - start
    return f"{seconds * 1000:.0f}ms" if seconds < 1 else f"{seconds:.1f}s"


def when(epoch: float | None) -> str:
    return iso(epoch) or ""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x1b``): a name
    stored by an older version must not drive the terminal that lists it."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def humanize(seconds: float) -> str:
    """A signed time distance as people say it: ``in 4 hours``, ``15 days ago``, ``now``.

    Rounded to the nearest whole unit, the unit chosen by moment.js's
    thresholds (so 23 h 59 min reads ``in a day``); one unit reads ``in an hour``.
    """
    size = abs(seconds)
    if not math.isfinite(size):  # stored by an older version, past any bound: as it is
        return f"{seconds}s"
    if size < 1:
        return "now"
    unit, length = next((u, n) for u, n, start in _UNITS if size >= start)
    count = max(round(size / length), 1)
    text = (("an " if unit == "hour" else "a ") + unit) if count == 1 else f"{count} {unit}s"
    return f"in {text}" if seconds > 0 else f"{text} ago"
