"""Printing for the CLI: aligned tables (rich) for people, ``--json`` for scripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click

from taskyard.core.durations import iso

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *,
                empty: str = "nothing to show") -> None:
    """An aligned table; wide enough for pipes, fitted to the terminal otherwise."""
    from rich.console import Console  # noqa: PLC0415 - rich is slow to import
    from rich.table import Table  # noqa: PLC0415

    rows = list(rows)
    if not rows:
        click.echo(empty)
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for header in headers:
        table.add_column(header.upper(), overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    Console(file=sys.stdout, width=None if sys.stdout.isatty() else 220,
            highlight=False).print(table)


def duration(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return ""
    seconds = end - start
    return f"{seconds * 1000:.0f}ms" if seconds < 1 else f"{seconds:.1f}s"


def when(epoch: float | None) -> str:
    return iso(epoch) or ""


def short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"
