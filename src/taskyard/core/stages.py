"""Stages (seed 001): named steps inside an attempt whose results are kept, so that a
later attempt skips the stages already finished and gets their results.

Pure rules shared by the worker and the store: stage names, and the line protocol a
shell handler uses to report stages (one line per report, appended to the file named
by ``$TASKYARD_STAGES``)::

    begin NAME
    end NAME [RESULT]        RESULT: JSON if it parses, else the text
    fail NAME [MESSAGE]
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

STAGE_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,100}")
STAGE_STATES = ("running", "succeeded", "failed")
MAX_STAGE_RESULT_BYTES = 256 * 1024
_VERBS = {"begin": "running", "end": "succeeded", "fail": "failed"}


class StageError(ValueError):
    """A stage report that cannot be accepted; the message says which and why."""


def check_stage_name(name: object) -> str:
    """The name itself, or StageError: 1-100 of letters, digits and ``_ . : -``."""
    if not isinstance(name, str) or not STAGE_NAME.fullmatch(name):
        raise StageError(f"stage name {name!r}: use 1-100 letters, digits or _ . : -")
    return name


def encode_stage_result(name: str, value: Any) -> str:
    """The JSON text of a stage's result, within the size limit."""
    try:
        text = json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StageError(f"stage {name!r}: the result is not JSON: {exc}") from None
    if len(text.encode()) > MAX_STAGE_RESULT_BYTES:
        raise StageError(f"stage {name!r}: the result is over {MAX_STAGE_RESULT_BYTES} bytes")
    return text


@dataclass(frozen=True, slots=True)
class StageReport:
    """One report: a stage began (``running``), ended (``succeeded``) or ``failed``."""

    name: str
    state: str
    result: Any = None
    error: str | None = None


def parse_stage_line(line: str) -> StageReport:
    """Read one line of the shell protocol (see the module docstring)."""
    verb, _, rest = line.strip().partition(" ")
    name, _, tail = rest.strip().partition(" ")
    if verb not in _VERBS:
        raise StageError(f"stage report {line.strip()!r}: begin with begin, end or fail")
    check_stage_name(name)
    state = _VERBS[verb]
    tail = tail.strip()
    if state == "succeeded" and tail:
        try:
            return StageReport(name, state, _json_result(tail))
        except ValueError:
            return StageReport(name, state, tail)
    if state == "failed":
        return StageReport(name, state, error=tail or None)
    return StageReport(name, state)


def _json_result(text: str) -> Any:
    """``text`` read as JSON, or ValueError. Python's reader also takes NaN, Infinity and
    numbers too large for a float (1e999 reads as infinity), which JSON has not: such a
    result could not be stored (see encode_stage_result), so the line keeps it as text."""
    return json.loads(text, parse_constant=_not_json, parse_float=_finite_float)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of a float's range")
    return value


def shell_done_names(done: dict[str, Any]) -> str:
    """``$TASKYARD_STAGES_DONE``: the finished stages' names, space-separated (names hold
    no spaces), so that ``case " $TASKYARD_STAGES_DONE " in *" build "*)`` can test one."""
    return " ".join(sorted(done))
