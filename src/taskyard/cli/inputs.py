"""What the CLI reads from users beyond plain options: job args (JSON text, ``@FILE`` or
``-`` for stdin) and whole numbers, each bounded as the stores bound them
(:mod:`taskyard.core.limits`), so that a number too large is one usage line, never a
database error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from taskyard.core.limits import COUNT_MAX, ID_MAX, INT_MAX, PRIORITY_MAX, too_deep
from taskyard.model.errors import InvalidInput

ID = click.IntRange(1, ID_MAX)
PRIORITY = click.IntRange(-PRIORITY_MAX, PRIORITY_MAX)
COUNT = click.IntRange(0, COUNT_MAX)
POSITIVE_COUNT = click.IntRange(1, COUNT_MAX)
LIMIT = click.IntRange(1, COUNT_MAX)
QUEUE_LENGTH = click.IntRange(1, INT_MAX)

args_option = click.option(
    "--args", "args_text", metavar="JSON|@FILE|-",
    help="Job args: a JSON object, @FILE to read it from a file, - from stdin.")


def read_args(text: str | None, option: str = "--args") -> dict[str, Any] | None:
    """The JSON object ``text`` gives (itself, ``@FILE`` or ``-``); None without it.
    Unreadable or malformed input is bad usage (exit 2), naming ``option``."""
    if text is None:
        return None
    args = read_json(text, option)
    if not isinstance(args, dict):
        raise click.BadParameter("must be a JSON object", param_hint=option)
    return args


def read_json(text: str, option: str) -> Any:
    """The JSON value ``text`` gives (itself, ``@FILE`` or ``-``); unreadable or
    malformed input is bad usage (exit 2), naming ``option``."""
    source = text
    if text == "-":
        source = sys.stdin.read()
    elif text.startswith("@"):
        try:
            source = Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(f"cannot read {text[1:]!r} ({exc})",
                                     param_hint=option) from None
    try:
        args = json.loads(source)
    except RecursionError:  # nested far beyond the limit: the limit's own message
        raise InvalidInput(str(too_deep(option))) from None
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint=option) from None
    return args
