"""What a Python handler may ask of the worker while it runs: its job, and stages.

A handler runs in a worker's child process; :func:`stage` talks to the worker over
the child's pipe, and the worker records the report in the database with the
attempt's fence. Outside a worker (a unit test, a script) :func:`stage` simply runs
the function, so handlers stay plain functions.
"""

from __future__ import annotations

# A Python child imports this module for every job it runs, even a handler that never
# calls stage(): so typing, inspect, dataclasses and the stage rules (re, json) are
# loaded only when needed (~3 MiB per child otherwise).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any, TypeVar, overload

    from taskyard.worker.pipe import Pipe

    T = TypeVar("T")


class Fenced(Exception):
    """This attempt is no longer the job's current one (expelled, canceled, timed out):
    the worker refused the stage report and is stopping the attempt."""


class JobContext:
    """The running job: its id, attempt number, and the results of the stages that
    earlier attempts finished (``done``)."""

    def __init__(self, job_id: int, attempt: int, done: dict[str, Any] | None = None,
                 _conn: Pipe | None = None) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.done: dict[str, Any] = {} if done is None else done
        self._conn = _conn

    def __repr__(self) -> str:
        return (f"JobContext(job_id={self.job_id!r}, attempt={self.attempt!r},"
                f" done={self.done!r}, _conn={self._conn!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobContext):
            return NotImplemented
        return ((self.job_id, self.attempt, self.done, self._conn)
                == (other.job_id, other.attempt, other.done, other._conn))

    # Mutable and compared by value: unhashable, as a dataclass with eq=True.
    __hash__ = None  # type: ignore[assignment]

    def report(self, name: str, state: str, result: Any = None) -> None:
        if self._conn is None:
            return
        self._conn.send({"stage": name, "state": state, "result": result})
        reply = self._conn.recv()
        if not reply.get("accepted"):
            raise Fenced(f"job {self.job_id} attempt {self.attempt}: stage {name!r} refused"
                         f" ({reply.get('why', 'fenced')})")


_current: JobContext | None = None


def current_job() -> JobContext | None:
    """The job this process is running, or None outside a worker."""
    return _current


def set_current(ctx: JobContext | None) -> None:
    global _current  # noqa: PLW0603 - one job at a time per child process
    _current = ctx


if TYPE_CHECKING:
    @overload
    def stage(name: str, func: Callable[..., Coroutine[Any, Any, T]], /, *args: Any,
              **kwargs: Any) -> Coroutine[Any, Any, T]: ...

    @overload
    def stage(name: str, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...


def stage(name: str, func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``func(*args, **kwargs)`` as the stage ``name`` and return its result.

    If an earlier attempt of this job finished the stage, ``func`` is not called: its
    stored result is returned. The result must be JSON; it is stored when the stage
    ends. A failing ``func`` marks the stage failed and its exception propagates.

    With an ``async def`` function, ``stage`` returns a coroutine to await, which does
    the same: ``total = await stage("sum", fetch_and_sum, url)``.
    """
    import inspect  # noqa: PLC0415 - memory: see the imports above

    from taskyard.core.stages import check_stage_name  # noqa: PLC0415

    check_stage_name(name)
    ctx = _current
    if inspect.iscoroutinefunction(func):
        return _async_stage(ctx, name, func, args, kwargs)
    if ctx is None:
        return func(*args, **kwargs)
    if name in ctx.done:
        return ctx.done[name]
    ctx.report(name, "running")
    try:
        value = func(*args, **kwargs)
    except BaseException as exc:
        _failed(ctx, name, exc)
        raise
    return _succeeded(ctx, name, value)


async def _async_stage(ctx: JobContext | None, name: str,
                       func: Callable[..., Coroutine[Any, Any, T]],
                       args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    """:func:`stage` for a coroutine function: the same steps, awaiting ``func``."""
    if ctx is None:
        return await func(*args, **kwargs)
    if name in ctx.done:
        done: T = ctx.done[name]
        return done
    ctx.report(name, "running")
    try:
        value = await func(*args, **kwargs)
    except BaseException as exc:
        _failed(ctx, name, exc)
        raise
    return _succeeded(ctx, name, value)


def _failed(ctx: JobContext, name: str, exc: BaseException) -> None:
    """Record a stage whose function raised (a fenced report is not recorded again)."""
    if not isinstance(exc, Fenced):
        ctx.report(name, "failed", f"{type(exc).__name__}: {exc}")


def _succeeded(ctx: JobContext, name: str, value: T) -> T:
    """Record a stage's result (failed instead if it is not JSON) and return it."""
    from taskyard.core.stages import StageError, encode_stage_result  # noqa: PLC0415

    try:
        encode_stage_result(name, value)
    except StageError as exc:
        ctx.report(name, "failed", str(exc))
        raise
    ctx.report(name, "succeeded", value)
    ctx.done[name] = value
    return value
