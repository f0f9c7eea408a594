"""``{arg}`` templates filled from a job's args: lock keys and rate-limit keys."""

from __future__ import annotations

import json
import string
from collections.abc import Mapping


class TemplateError(ValueError):
    """A template that is malformed or names an arg the job lacks."""


_FORMATTER = string.Formatter()


def template_fields(template: str, where: str) -> list[str]:
    """The ``{arg}`` names ``template`` uses, or TemplateError (an unbalanced brace, a
    field that is not a plain name); ``where`` names the template in the message."""
    try:
        fields = [f for _, f, _, _ in _FORMATTER.parse(template) if f is not None]
    except ValueError as exc:
        raise TemplateError(f"{where}: {exc}") from None
    for name in fields:
        if not name.isidentifier():
            raise TemplateError(f"{where}: {{{name}}} must name one of the job's args")
    return fields


def fill_template(template: str, args: Mapping[str, object], where: str) -> str:
    """``template`` with its ``{arg}`` placeholders filled from ``args`` (text as is,
    other values as JSON); TemplateError names the args the job lacks."""
    fields = template_fields(template, where)
    missing = [f for f in fields if f not in args]
    if missing:
        raise TemplateError(
            f"{where}: the job's args have no {', '.join(repr(m) for m in missing)}")
    return template.format_map({f: _plain(args[f]) for f in fields})


def _plain(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
