"""A ``python:`` handler checked where it is declared: its module imports and names it."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.model.errors import InvalidInput


def verify_handler(handler: str) -> None:
    """Check that a ``python:`` handler imports here; InvalidInput names what is missing."""
    try:
        spec = parse_handler(handler)
    except HandlerSpecError as exc:
        raise InvalidInput(str(exc)) from None
    if spec.kind != "python":
        return
    if "" not in sys.path and os.getcwd() not in sys.path:
        # Workers import handlers relative to their working directory; so do we.
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(spec.module)
    except Exception as exc:
        raise InvalidInput(
            f"handler {handler!r}: module {spec.module!r} cannot be imported "
            f"({type(exc).__name__}: {exc})"
        ) from None
    target: Any = module
    for part in spec.function.split("."):
        target = getattr(target, part, None)
    if not callable(target):
        raise InvalidInput(
            f"handler {handler!r}: module {spec.module!r} has no function {spec.function!r}"
        )
