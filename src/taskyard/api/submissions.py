"""Submit options as Python users write them, checked and turned into submissions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from taskyard.core.durations import DurationError, check_time, parse_duration, parse_when
from taskyard.core.limits import check_name
from taskyard.core.trace_context import TraceContextError, encode
from taskyard.model.errors import InvalidInput, refused_as_invalid
from taskyard.model.records import JobSubmission
from taskyard.model.tracing import current_context

if TYPE_CHECKING:
    from taskyard.store import Store


@dataclass(frozen=True)
class SubmitOptions:
    """How jobs are submitted, besides their type and args (see :meth:`Yard.submit`)."""

    priority: int = 0
    run_after: float | str | None = None
    pools: Sequence[str] | None = None
    locks: Sequence[str] = ()
    timeout: float | str | None = None
    unique_key: str | None = None
    unique_for: float | str | None = None
    on_duplicate: str = "existing"
    connection: Any = None
    """A caller's connection whose transaction the submit joins (PostgreSQL)."""
    traceparent: str | None = None
    tracestate: str | None = None
    """The W3C trace context the jobs carry (None: the current span's, if any)."""

    @classmethod
    def of(cls, where: str, **options: Any) -> SubmitOptions:
        """Options by name; InvalidInput names an unknown one."""
        unknown = set(options) - NAMES
        if unknown:
            raise InvalidInput(f"{where}: unknown options {sorted(unknown)} "
                               f"(one of {', '.join(sorted(NAMES))})")
        return cls(**options)

    def submissions(self, type_name: str, args_list: Sequence[Mapping[str, Any]],
                    now: Callable[[], float], *, where: str = "submit") -> list[JobSubmission]:
        """One submission per args mapping; ``now``: the database clock (read only for a
        ``run_after`` given as a duration or a time). Errors begin with ``where``."""
        timeout = _seconds(self.timeout, "timeout", where)
        unique_for = _seconds(self.unique_for, "unique_for", where)
        when: float | None = None
        try:
            if isinstance(self.run_after, str):
                when = parse_when(self.run_after, now=now(), field="run_after")
            elif self.run_after is not None:
                when = check_time(self.run_after, field="run_after")
        except DurationError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        if self.locks:
            with refused_as_invalid(where):  # as a task type's locks are (a NUL reached SQL)
                for lock in self.locks:
                    check_name(lock, "lock")
        pools = tuple(self.pools) if self.pools else None
        trace = trace_context_of(self.traceparent, self.tracestate, where)
        return [JobSubmission(
            type=type_name, args=dict(args) if isinstance(args, Mapping) else args,
            priority=self.priority, pools=pools, run_after=when, locks=tuple(self.locks),
            timeout=timeout, unique_key=self.unique_key, unique_for=unique_for,
            on_duplicate=self.on_duplicate, trace_context=trace) for args in args_list]


def trace_context_of(traceparent: str | None, tracestate: str | None,
                     where: str) -> str | None:
    """The stored trace context of a submit: the one given (InvalidInput if it does not
    parse), else the current one (model/tracing.py), else None."""
    if traceparent is None:
        if tracestate is not None:
            raise InvalidInput(f"{where}: tracestate: given without a traceparent")
        return current_context()
    try:
        return encode(traceparent, tracestate)
    except TraceContextError as exc:
        raise InvalidInput(f"{where}: {exc}") from None


NAMES = frozenset(f.name for f in fields(SubmitOptions))
JOB_FIELDS = ("type", "args", "priority", "run_after", "pools", "locks", "timeout",
              "unique_key", "unique_for", "on_duplicate", "traceparent", "tracestate")
"""The fields of a job in a batch: those of ``POST /api/v1/jobs`` (whose trace context
comes in its ``traceparent`` header)."""
BATCH_MAX = 1000
"""Jobs in one batch at most (``POST /api/v1/jobs/batch``, ``submit --from-file``
submits a longer file batch by batch)."""


def job_submissions(jobs: Sequence[Any], now: Callable[[], float]) -> list[JobSubmission]:
    """Submissions for job mappings as ``POST /api/v1/jobs`` takes them (``type``,
    ``args`` and the options); InvalidInput names the first bad job's index (0-based)
    and field, as ``job N: field: …``. ``now`` (the database clock) is read once, and
    only for a ``run_after`` given as a duration."""
    if not 1 <= len(jobs) <= BATCH_MAX:
        raise InvalidInput(f"jobs: {len(jobs)} jobs; a batch holds 1 to {BATCH_MAX}")
    clock = _Once(now)
    # The jobs of a batch mostly share their options: each distinct set is checked and
    # made into a submission once, then copied with each job's type and args.
    made: dict[Any, JobSubmission] = {}
    types: set[str] = set()
    subs: list[JobSubmission] = []
    for index, body in enumerate(jobs):
        if not isinstance(body, Mapping):
            raise InvalidInput(f"job {index}: a job must be an object with a 'type'")
        if body.keys() - _FIELDS:
            unknown = sorted(map(str, body.keys() - _FIELDS))
            raise InvalidInput(f"job {index}: unknown fields {unknown} "
                               f"(one of {', '.join(JOB_FIELDS)})")
        type_name: Any = body.get("type")
        args = body.get("args")
        if type_name not in types:
            _check_shape({"type": type_name}, f"job {index}")
            with refused_as_invalid(f"job {index}"):
                types.add(check_name(type_name, "type"))
        if args is not None and not isinstance(args, Mapping):
            _check_shape({"args": args}, f"job {index}")
        options = {k: v for k, v in body.items()
                   if k not in _BODY and v is not None}
        key = _frozen(options)
        template = made.get(key) if key is not None else None
        if template is None:
            _check_shape(options, f"job {index}")
            template = SubmitOptions(**options).submissions(
                "", [{}], clock, where=f"job {index}")[0]
            if key is not None:
                made[key] = template
        subs.append(JobSubmission(  # the fields SubmitOptions.submissions sets
            type=type_name, args=dict(args) if args else {}, priority=template.priority,
            pools=template.pools, run_after=template.run_after, locks=template.locks,
            timeout=template.timeout, unique_key=template.unique_key,
            unique_for=template.unique_for, on_duplicate=template.on_duplicate,
            trace_context=template.trace_context))
    return subs


_FIELDS = frozenset(JOB_FIELDS)
_BODY = frozenset(("type", "args"))


def _frozen(options: Mapping[str, Any]) -> Any:
    """A hashable key for a job's options (None when one cannot be made)."""
    try:
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                           for k, v in options.items()))
        hash(key)
    except TypeError:
        return None
    return key


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _texts(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)


def _when(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


_SHAPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "type": (lambda v: isinstance(v, str) and bool(v), "a task type name"),
    "args": (lambda v: isinstance(v, Mapping), "an object"),
    "priority": (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    "run_after": (_when, "a duration, a time or epoch seconds"),
    "pools": (_texts, "a list of pool names"),
    "locks": (_texts, "a list of lock names"),
    "timeout": (_when, "a duration"),
    "unique_key": (_text, "text"),
    "unique_for": (_when, "a duration"),
    "on_duplicate": (_text, "existing or reject"),
    "traceparent": (_text, "a W3C traceparent"),
    "tracestate": (_text, "a W3C tracestate"),
}


def _check_shape(body: Mapping[str, Any], where: str) -> None:
    """The JSON types of (some of) a job's fields; their values are checked by the submit
    path. A type that is None is missing."""
    if "type" in body and body["type"] is None:
        raise InvalidInput(f"{where}: type: a task type name is required")
    for field, value in body.items():
        ok, expected = _SHAPES[field]
        if value is not None and not ok(value):
            raise InvalidInput(f"{where}: {field}: must be {expected}, not "
                               f"{type(value).__name__}")


class _Once:
    """``now()`` read at most once (one clock for a whole batch)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._value: float | None = None

    def __call__(self) -> float:
        if self._value is None:
            self._value = self._now()
        return self._value


def submit_batch(jobs: Any, store: Store, submit: Callable[[list[JobSubmission]], list[int]],
                 options: tuple[Any, ...] = ()) -> list[int]:
    """:meth:`Yard.submit_many` given jobs alone: job mappings (:func:`job_submissions`)
    submitted with ``submit`` (one transaction: all or none), their ids in order.
    InvalidInput names the first bad job's index and field — an unknown type too, which
    the store reports without its job. ``options``: submit_many's others, which jobs
    alone do not take (each job carries its own)."""
    if isinstance(jobs, str | Mapping) or callable(jobs) or any(options):
        raise InvalidInput("submit_many: give a type and its args list, or a list of jobs "
                           "alone (each with its type and options)")
    subs = job_submissions(jobs, store.now)
    try:
        return submit(subs)
    except InvalidInput as exc:
        known = store.task_types.by_name({s.type for s in subs})
        raise InvalidInput(_first_unknown_type(subs, known) or str(exc)) from None


def _first_unknown_type(subs: Sequence[JobSubmission], known: Collection[str]) -> str | None:
    for index, sub in enumerate(subs):
        if sub.type not in known:
            return f"job {index}: type: unknown task type {sub.type!r}"
    return None


def _seconds(value: float | str | None, name: str, where: str) -> float | None:
    """Seconds of a positive duration (``90``, ``5m``), or InvalidInput naming ``name``."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value, field=name)
    except DurationError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if seconds <= 0:
        raise InvalidInput(f"{where}: {name}: {value!r} must be more than 0 seconds")
    return seconds
