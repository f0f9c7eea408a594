"""Small SQL building blocks shared by the store's modules."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, literal_column


def lit(value: str) -> ColumnElement[Any]:
    """A state name as an SQL literal, not a bound parameter.

    Partial indexes (``WHERE state = 'pending'``) are only usable when the
    planner can see the value: SQLite at prepare time, PostgreSQL in generic
    plans of prepared statements. Values are taskyard's own state names.
    """
    assert value.replace("_", "").isalnum()
    return literal_column(f"'{value}'")


def lits(values: Iterable[str]) -> list[ColumnElement[Any]]:
    return [lit(v) for v in sorted(values)]
