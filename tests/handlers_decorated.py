"""A module that declares task types with the Yard decorator (imported by tests)."""

from __future__ import annotations


def shout(text: str) -> str:
    return text.upper()


def multiply(a: int, b: int) -> dict[str, int]:
    return {"product": a * b}
