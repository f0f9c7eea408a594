"""Task types and pools written once for both backends (created or updated in place)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from taskyard.store.cursor import Cursor
from taskyard.store.schema.task_type_rows import COLUMNS

_TYPES = f"SELECT {', '.join(COLUMNS)} FROM task_types"


def put_task_type(raw: Cursor, row: Mapping[str, Any]) -> None:
    """The task type of ``row`` (schema/task_type_rows.py:spec_to_row) created, or
    updated in place when it exists (its ``created_at`` kept)."""
    names = list(row)
    changes = ", ".join(f"{n} = excluded.{n}" for n in names if n != "name")
    raw.run(f"INSERT INTO task_types ({', '.join(names)}, created_at, updated_at) "
            f"VALUES ({', '.join('?' for _ in names)}, {{now}}, {{now}}) "
            f"ON CONFLICT (name) DO UPDATE SET {changes}, updated_at = {{now}}",
            list(row.values()))


def ensure_pools(raw: Cursor, names: Iterable[str]) -> None:
    """Pools come into being when a worker or a type names them."""
    raw.many("INSERT INTO pools (name, created_at) VALUES (?, {now}) "
             "ON CONFLICT (name) DO NOTHING", [(n,) for n in names])


def put_pool(raw: Cursor, name: str, description: str) -> None:
    """A pool declared with its description (created, or its description updated)."""
    raw.run("INSERT INTO pools (name, description, created_at) VALUES (?, ?, {now}) "
            "ON CONFLICT (name) DO UPDATE SET description = excluded.description",
            (name, description))


def read_task_types(raw: Cursor, name: str | None = None) -> list[tuple[Any, ...]]:
    """Task type ``name``'s row, or every one by name (the columns of ``COLUMNS``)."""
    if name is not None:
        return raw.all(f"{_TYPES} WHERE name = ?", (name,))
    return raw.all(f"{_TYPES} ORDER BY name")


def pool_names(raw: Cursor) -> list[str]:
    """Every pool named by a worker or a task type."""
    return [n for (n,) in raw.all("SELECT name FROM pools ORDER BY name")]
