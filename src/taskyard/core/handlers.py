"""Handler specifications: ``python:MOD:FUNC``, ``shell:CMD`` and ``celery:TASK`` (a Celery
task, run by Celery workers through ``taskyard celery-pool``)."""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w]*)\}")
SHELL_TEXT_MAX = 127 * 1024
"""Bytes of a shell job's encoded args (``$TASKYARD_ARGS``) and of its rendered command,
at most: Linux refuses to start a program with one argument or environment string over
128 KiB (``Argument list too long``), and the worker adds a little of its own."""


class HandlerSpecError(ValueError):
    """A handler string that cannot be understood."""


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """A parsed handler: a Python callable, a shell command template or a Celery task."""

    kind: Literal["python", "shell", "celery"]
    target: str
    """``module:function`` for python, the command template for shell, the task's
    registered name for celery."""

    @property
    def module(self) -> str:
        return self.target.split(":", 1)[0]

    @property
    def function(self) -> str:
        return self.target.split(":", 1)[1]

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


@functools.lru_cache(maxsize=1024)
def parse_handler(text: str) -> HandlerSpec:
    """Read ``python:MOD:FUNC``, ``shell:CMD`` or ``celery:TASK``; the message says what
    is wrong."""
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("python", "shell", "celery"):
        raise HandlerSpecError(
            f"handler {text!r}: must start with 'python:' (python:MODULE:FUNCTION), "
            "'shell:' (shell:COMMAND) or 'celery:' (celery:TASK_NAME)"
        )
    if kind == "celery":
        if not rest or any(c.isspace() for c in rest):
            raise HandlerSpecError(
                f"handler {text!r}: expected celery:TASK_NAME, e.g. celery:proj.tasks.add")
        return HandlerSpec("celery", rest)
    if kind == "shell":
        if not rest.strip():
            raise HandlerSpecError(f"handler {text!r}: the shell command is empty")
        return HandlerSpec("shell", rest)
    module, sep, function = rest.partition(":")
    if not sep or not _DOTTED.match(module) or not function.isidentifier():
        raise HandlerSpecError(
            f"handler {text!r}: expected python:MODULE:FUNCTION, e.g. python:mypkg.jobs:resize"
        )
    return HandlerSpec("python", f"{module}:{function}")


def render_shell(template: str, args: Mapping[str, object]) -> str:
    """Replace ``{arg}`` placeholders with shell-quoted args (JSON for non-strings)."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in args:
            raise HandlerSpecError(f"shell handler: the job's args have no {name!r}")
        value = args[name]
        if not isinstance(value, str):
            value = json.dumps(value)
        return shlex.quote(value)

    return _PLACEHOLDER.sub(fill, template)


@functools.lru_cache(maxsize=1024)
def shell_placeholders(template: str) -> frozenset[str]:
    """The arg names a shell command template's ``{placeholder}`` s use."""
    return frozenset(_PLACEHOLDER.findall(template))


def check_shell_job(template: str, args: Mapping[str, object], args_text: str) -> None:
    """Refuse at submit a shell job that could not start: a ``{placeholder}`` its args
    lack, or args (encoded as ``args_text``) or a command too large to pass."""
    names = shell_placeholders(template)
    missing = sorted(names - args.keys())
    if missing:
        raise HandlerSpecError(
            f"shell handler: the job's args have no {', '.join(map(repr, missing))}")
    if len(args_text) > SHELL_TEXT_MAX:
        raise HandlerSpecError(
            f"shell handler: args are {len(args_text)} bytes encoded; a shell handler gets "
            f"them in $TASKYARD_ARGS, at most {SHELL_TEXT_MAX} bytes")
    if names and len(command := render_shell(template, args).encode()) > SHELL_TEXT_MAX:
        raise HandlerSpecError(
            f"shell handler: the command is {len(command)} bytes once its placeholders "
            f"are filled (at most {SHELL_TEXT_MAX})")
