"""Task functions: a Python function declared as a task type submits itself.

``@yard.task_type()`` leaves the function as it is — workers import and call it by
its module and name, tests call it directly — and gives it ``submit``,
``submit_many`` and ``options``::

    @yard.task_type()
    def add(a: int, b: int) -> int:
        return a + b

    job = add.submit(2, 3)                       # args bound as add(2, 3) would bind them
    job.result(timeout=30)                       # 5
    add.options(priority=5, unique_key="k").submit(a=1, b=2)
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar

from taskyard.api.handles import JobHandle
from taskyard.api.submissions import SubmitOptions
from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec

if TYPE_CHECKING:
    from taskyard.api.yard import Yard

P = ParamSpec("P")
R_co = TypeVar("R_co", covariant=True)


class Submitter(Generic[P]):
    """Submits jobs of one task type with fixed options (``task.options(...)``)."""

    def __init__(self, yard: Yard, type_name: str, signature: inspect.Signature,
                 options: SubmitOptions) -> None:
        self._yard = yard
        self._type = type_name
        self._signature = signature
        self._options = options

    def options(self, **options: Any) -> Submitter[P]:
        """The same, with more options: ``priority``, ``run_after``, ``pools``,
        ``locks``, ``timeout``, ``unique_key``, ``unique_for``, ``on_duplicate``,
        ``connection`` (as :meth:`Yard.submit` takes them)."""
        merged = {**vars(self._options), **options}
        return Submitter(self._yard, self._type, self._signature,
                         SubmitOptions.of(f"{self._type}.options", **merged))

    def submit(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle:
        """Submit one job, its args bound to the function's parameters as a call would
        bind them; InvalidInput names a missing or unexpected one."""
        (handle,) = self._enqueue([self.bind(args, kwargs, f"{self._type}.submit")])
        return handle

    def submit_many(self, calls: Iterable[Mapping[str, Any] | tuple[Any, ...] | list[Any]],
                    ) -> list[JobHandle]:
        """Submit one job per call in one transaction (all or none): each call a mapping
        of keyword args or a sequence of positional args."""
        where = f"{self._type}.submit_many: call"
        return self._enqueue([self.bind((), dict(call), f"{where} {n}")
                              if isinstance(call, Mapping)
                              else self.bind(tuple(call), {}, f"{where} {n}")
                              for n, call in enumerate(calls)])

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any],
             where: str = "") -> dict[str, Any]:
        """The job's args: the call's arguments by parameter name. InvalidInput names a
        missing or unexpected argument, or one whose value is not JSON."""
        where = where or f"{self._type}.submit"
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        out: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if self._signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            else:
                out[name] = value
        _check_json(out, where)
        return out

    def _enqueue(self, args_list: list[dict[str, Any]]) -> list[JobHandle]:
        ids = self._yard.enqueue(self._type, args_list, self._options)
        return [JobHandle(self._yard, job_id) for job_id in ids]


def _check_json(args: dict[str, Any], where: str) -> None:
    """InvalidInput naming the first argument whose value is not JSON (the store would
    only say that the job's args are not)."""
    for name, value in args.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"{where}: argument {name!r} is not JSON ({exc})") from None


class TaskFunction(Protocol[P, R_co]):
    """A function declared with ``@yard.task_type()``: call it as before, or submit it."""

    __taskyard_type__: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...
    def submit(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle: ...
    def submit_many(self, calls: Iterable[Mapping[str, Any] | tuple[Any, ...] | list[Any]],
                    ) -> list[JobHandle]: ...
    def options(self, **options: Any) -> Submitter[P]: ...


def type_name_of(task: str | Callable[..., Any], where: str) -> str:
    """The task type of a task function, or the name given (InvalidInput otherwise)."""
    name = getattr(task, "__taskyard_type__", task)
    if not isinstance(name, str):
        raise InvalidInput(f"{where}: {task!r} is not a task type name")
    return name


_FORBIDDEN: dict[inspect._ParameterKind, str] = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only", inspect.Parameter.VAR_POSITIONAL: "*args"}


def as_task(yard: Yard, type_name: str, func: Callable[P, Any]) -> None:
    """Give ``func`` its ``submit``, ``submit_many`` and ``options`` (in place: workers
    import the function itself). Refused: parameters a job's args (passed by name)
    cannot fill."""
    signature = inspect.signature(func)
    for param in signature.parameters.values():
        kind = _FORBIDDEN.get(param.kind)
        if kind is not None:
            raise InvalidInput(f"task type {type_name!r}: parameter {param.name!r} is "
                               f"{kind}; a job's args are passed by name")
    submitter: Submitter[P] = Submitter(yard, type_name, signature, SubmitOptions())
    target: Any = func
    target.__taskyard_type__ = type_name
    target.submit = submitter.submit
    target.submit_many = submitter.submit_many
    target.options = submitter.options


POLICY_FIELDS = frozenset(f.name for f in fields(TaskTypeSpec)) - {"name", "handler"}
"""What a task type's ``policy`` may set: every :class:`TaskTypeSpec` field but these two."""


def task_type_spec(name: str, handler: str, policy: Mapping[str, Any]) -> TaskTypeSpec:
    """Task type ``name`` of ``handler`` with ``policy`` (:class:`TaskTypeSpec` fields),
    or InvalidInput naming the fields it does not know."""
    unknown = set(policy) - POLICY_FIELDS
    if unknown:
        raise InvalidInput(f"task type {name!r}: unknown fields {sorted(unknown)}")
    given = dict(policy)
    for listed in ("pools", "locks"):
        if listed in given:
            given[listed] = tuple(given[listed])
    return TaskTypeSpec(name=name, handler=handler, **given)


def function_handler(func: Callable[..., Any]) -> str:
    """``python:MODULE:QUALNAME`` of a function workers can import; InvalidInput for one
    defined in ``__main__`` or inside another function."""
    if func.__module__ == "__main__":
        raise InvalidInput(
            f"task type for {func.__qualname__}: define it in an importable module, "
            "not __main__, so that workers can import it"
        )
    if "<locals>" in func.__qualname__:
        raise InvalidInput(
            f"task type for {func.__qualname__}: define it at module level, "
            "so that workers can import it"
        )
    return f"python:{func.__module__}:{func.__qualname__}"
