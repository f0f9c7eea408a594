"""Tasks that wait without a worker: approvals, waits for a signal, sleeps.

A graph task is work for a worker (``type``), or one of three kinds that hold no slot
and no lock and run no handler (AWX's approval nodes, Temporal's signals and timers).
Once its dependencies are met such a job is ``awaiting``; it ends by a decision (``job
approve`` / ``job deny``), by the first signal of its name (and key) sent after it was
submitted, or when its timeout passes on the database clock (a sleep's duration). The
rules here are pure: the store writes what they decide, the simulator plays them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from taskyard.core.durations import DurationError, parse_duration
from taskyard.core.limits import LimitError, check_name, quoted
from taskyard.core.states import JobState


class Kind(StrEnum):
    """What a job is: work for a worker, or a wait that holds none."""

    TASK = "task"
    APPROVAL = "approval"
    """A person says yes (``job approve`` → succeeded) or no (``job deny`` → failed)."""
    WAIT = "wait"
    """Succeeds on the first signal of its name (and key) sent after it was submitted."""
    SLEEP = "sleep"
    """A durable timer: succeeds its duration after it became awaiting."""


WAIT_KINDS = (Kind.APPROVAL, Kind.WAIT, Kind.SLEEP)
"""The kinds a graph task names instead of ``type`` (one of them, or ``type``)."""
KEY_MAX = 400
"""Characters of a signal's key (the column's width)."""
TIMED_OUT_BY = "scheduler"
"""Who decided a timeout: the scheduling cycle that found it past its deadline."""


class Decision(StrEnum):
    """How an approval or a wait ended, as its result says."""

    APPROVED = "approved"
    DENIED = "denied"
    TIMED_OUT = "timed_out"


class WaitError(ValueError):
    """A wait task or a signal refused; the message names the field."""


@dataclass(frozen=True, slots=True)
class WaitSpec:
    """A wait task as the graph gives it: its kind, the signal it waits for (``wait``),
    and its timeout in seconds (a sleep's duration; None: no timeout)."""

    kind: Kind
    signal: str | None = None
    key: str | None = None
    timeout: float | None = None


def parse_wait(where: str, kind: Kind, value: Any) -> WaitSpec:
    """The body of ``approval: {timeout?}``, ``wait: {signal, key?, timeout?}`` or
    ``sleep: DURATION`` (``where`` names the task in errors)."""
    if kind is Kind.SLEEP:
        return WaitSpec(kind, timeout=_seconds(f"{where}: sleep", value, required=True))
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise WaitError(f"{where}: {kind} must be a mapping "
                        f"({'{timeout}' if kind is Kind.APPROVAL else '{signal, key, timeout}'})")
    allowed = {"timeout"} if kind is Kind.APPROVAL else {"signal", "key", "timeout"}
    unknown = set(value) - allowed
    if unknown:
        raise WaitError(f"{where}: {kind} has unknown keys {sorted(map(str, unknown))} "
                        f"(expected {', '.join(sorted(allowed))})")
    timeout = _seconds(f"{where}: {kind} timeout", value.get("timeout"), required=False)
    if kind is Kind.APPROVAL:
        return WaitSpec(kind, timeout=timeout)
    name, key = check_signal(value.get("signal"), value.get("key"), f"{where}: wait")
    return WaitSpec(kind, name, key, timeout)


def check_signal(name: Any, key: Any, where: str = "signal") -> tuple[str, str | None]:
    """A signal's name (text, 1-200 characters, no control characters) and key (text or
    a whole number, at most :data:`KEY_MAX` characters; None: none)."""
    if not isinstance(name, str) or not name:
        raise WaitError(f"{where}: signal must name the signal (text)")
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    if key is not None and not isinstance(key, str):
        raise WaitError(f"{where}: key must be text, got {type(key).__name__}")
    try:
        check_name(name, f"{where}: signal name")
        if key is not None:
            check_name(key, f"{where}: key", empty=True, max_length=KEY_MAX)
    except LimitError as exc:
        raise WaitError(str(exc)) from None
    return name, key


def _seconds(where: str, raw: Any, *, required: bool) -> float | None:
    if raw is None and not required:
        return None
    if not isinstance(raw, str | int | float) or isinstance(raw, bool):
        raise WaitError(f"{where} must be a duration like 90, 90s, 5m, 2h or 1d")
    try:
        seconds = parse_duration(raw, field=where)
    except DurationError as exc:
        raise WaitError(str(exc)) from None
    if seconds <= 0:
        raise WaitError(f"{where} must be more than 0 seconds, got {quoted(raw)}")
    return seconds


def ready_state(kind: str) -> JobState:
    """The state a job enters once its dependencies are met: pending for work, awaiting
    for an approval, a wait or a sleep."""
    return JobState.PENDING if kind == Kind.TASK else JobState.AWAITING


def decided(decision: Decision, note: str | None, by: str | None) -> dict[str, Any]:
    """An approval's or a wait's result: the decision, its note and who took it."""
    return {"decision": decision.value, "note": note, "by": by}


def on_timeout(kind: str) -> tuple[JobState, dict[str, Any] | None]:
    """A job whose timeout passed while awaiting: a sleep has slept (succeeded, no
    result); an approval or a wait fails, its result saying it timed out."""
    if kind == Kind.SLEEP:
        return JobState.SUCCEEDED, None
    return JobState.FAILED, decided(Decision.TIMED_OUT, None, TIMED_OUT_BY)


def signal_matches(wanted: str, wanted_key: str | None, name: str, key: str | None) -> bool:
    """Does the signal ``name``/``key`` complete a wait for ``wanted``/``wanted_key``?
    The names must be equal; a wait with a key needs that key, one without takes any."""
    return name == wanted and (wanted_key is None or key == wanted_key)


def awaits_text(kind: str, signal: str | None, key: str | None) -> str:
    """What an awaiting job awaits, in words."""
    if kind == Kind.APPROVAL:
        return "an approval"
    if kind == Kind.SLEEP:
        return "its sleep to end"
    keyed = "" if key is None else f" with key {quoted(key)}"
    return f"signal {quoted(signal)}{keyed}"


__all__ = ["KEY_MAX", "TIMED_OUT_BY", "WAIT_KINDS", "Decision", "Kind",
           "WaitError", "WaitSpec", "awaits_text", "check_signal", "decided", "on_timeout",
           "parse_wait", "ready_state", "signal_matches"]
