"""Handler specifications: ``python:MOD:FUNC``, ``shell:CMD`` and ``celery:TASK`` (a Celery
task, run by Celery workers through ``taskyard celery-pool``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w]*)\}")
SHELL_TEXT_MAX = 127 * 1024
"""Bytes of a shell job's encoded args (``$TASKYARD_ARGS``, each placeholder's value
being a part of them), at most: Linux refuses to start a program with one argument or
environment string over 128 KiB (``Argument list too long``), and the worker adds a
little of its own."""


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


ARG_VARIABLE = "TASKYARD_ARG_"
"""Prefix of the environment variables that hold a shell job's placeholder args."""
_BARE, _SINGLE, _DOUBLE, _ARITH = "bare", "single", "double", "arith"


def arg_variable(name: str) -> str:
    """The environment variable that holds arg ``name`` for a shell handler (a name
    that is not ASCII is spelled in hex: the shell takes ASCII variable names only)."""
    return ARG_VARIABLE + (name if name.isascii() else "_" + name.encode().hex())


def render_shell(template: str, args: Mapping[str, object]) -> str:
    """The command to run: each ``{arg}`` placeholder replaced by a reference to the
    environment variable holding that arg (:func:`shell_arg_env`), quoted for where it
    stands — bare, inside '...' or "...", inside ``$(…)`` or backquotes — so that it is
    one word and its value is never read as shell code (the shell does not parse what
    an expansion gives: a value holding ``$(…)``, quotes or ``;`` stays text). In
    arithmetic (``$((…))``) it stands unquoted, as arithmetic needs. What the command
    does with the value (``eval``, ``sh -c``) is the handler's business."""
    out: list[str] = []
    scan = _Quoting()
    i, end = 0, len(template)
    while i < end:
        if template[i] == "{" and (match := _PLACEHOLDER.match(template, i)):
            name = match.group(1)
            if name not in args:
                raise HandlerSpecError(f"shell handler: the job's args have no {name!r}")
            out.append(scan.reference("${" + arg_variable(name) + "}"))
            i = match.end()
            continue
        taken = scan.step(template, i)
        out.append(template[i:i + taken])
        i += taken
    return "".join(out)


class _Quoting:
    """Where a position of a shell command stands: bare, in '...', in "...", or in
    arithmetic, through ``$(…)``, ``$((…))``, parentheses and backquotes."""

    def __init__(self) -> None:
        self.state = _BARE
        self.stack: list[tuple[str, str]] = []  # (state to return to, what opened)

    def reference(self, ref: str) -> str:
        return {_BARE: f'"{ref}"', _DOUBLE: ref, _SINGLE: f"'\"{ref}\"'",
                _ARITH: ref}[self.state]

    def step(self, text: str, i: int) -> int:
        """Move past the character(s) at ``i``; how many."""
        char, state = text[i], self.state
        if state == _SINGLE:
            self.state = _BARE if char == "'" else _SINGLE
            return 1
        if char == "\\" and i + 1 < len(text):
            return 2  # an escaped character opens or closes nothing
        if text.startswith("$((", i):
            self._open(_ARITH, "arith")
            return 3
        if text.startswith("$(", i):
            self._open(_BARE, "cmd")
            return 2
        if char == "`":
            if self.stack and self.stack[-1][1] == "tick":
                self.state = self.stack.pop()[0]
            else:
                self._open(_BARE, "tick")
            return 1
        if state == _DOUBLE:
            self.state = _BARE if char == '"' else _DOUBLE
            return 1
        return self._bare(text, i)

    def _bare(self, text: str, i: int) -> int:
        char = text[i]
        if char == "'" and self.state == _BARE:
            self.state = _SINGLE
        elif char == '"' and self.state == _BARE:
            self.state = _DOUBLE
        elif char == "(":
            self._open(self.state, "paren")
        elif char == ")" and self.stack:
            opened = self.stack[-1][1]
            if opened == "arith" and text.startswith("))", i):
                self.state = self.stack.pop()[0]
                return 2
            if opened in ("paren", "cmd"):
                self.state = self.stack.pop()[0]
        return 1

    def _open(self, state: str, what: str) -> None:
        self.stack.append((self.state, what))
        self.state = state


def shell_arg_env(template: str, args: Mapping[str, object]) -> dict[str, str]:
    """The environment variables :func:`render_shell`'s command reads: each placeholder's
    arg, as text (JSON for what is not a string)."""
    return {arg_variable(name): value if isinstance(value, str) else json.dumps(value)
            for name in shell_placeholders(template) if name in args
            for value in (args[name],)}


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
    # The command does not grow with the values (they are in the environment, each a
    # part of the args, which are within the bound): nothing more to check.
