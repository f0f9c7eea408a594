"""Task types: create, update, read."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from taskyard.core.durations import Interval
from taskyard.core.handlers import HandlerSpecError, parse_handler
from taskyard.core.locks import LockTemplateError, check_template
from taskyard.store import schema as t
from taskyard.store.base import StoreBase
from taskyard.store.errors import InvalidInput
from taskyard.store.raw import Raw
from taskyard.store.records import Prerequisite, TaskTypeSpec, dumps, loads


def validate_task_type(spec: TaskTypeSpec) -> None:
    """Reject a spec whose fields cannot work, naming the field."""
    where = f"task type {spec.name!r}"
    if not spec.name or len(spec.name) > 200 or any(c.isspace() for c in spec.name):
        raise InvalidInput(f"{where}: the name must be 1-200 characters without spaces")
    try:
        parse_handler(spec.handler)
    except HandlerSpecError as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if not spec.pools or any(not p for p in spec.pools):
        raise InvalidInput(f"{where}: pools must name at least one pool")
    checks: list[tuple[bool, str]] = [
        (spec.cost >= 0, "cost must be >= 0"),
        (spec.retries >= 0, "retries must be >= 0"),
        (spec.max_worker_losses >= 0, "max_worker_losses must be >= 0"),
        (spec.retry_delay >= 0, "retry_delay must be >= 0"),
        (spec.retry_backoff >= 1, "retry_backoff must be >= 1"),
        (spec.timeout is None or spec.timeout > 0, "timeout must be > 0"),
        (spec.max_queue_length is None or spec.max_queue_length > 0,
         "max_queue_length must be > 0"),
        (spec.backoff_factor is None or spec.backoff_factor > 1, "backoff_factor must be > 1"),
    ]
    for ok, message in checks:
        if not ok:
            raise InvalidInput(f"{where}: {message}")
    for lock in spec.locks:
        try:
            check_template(lock)
        except LockTemplateError as exc:
            raise InvalidInput(f"{where}: {exc}") from None


def spec_to_row(spec: TaskTypeSpec) -> dict[str, Any]:
    interval = spec.interval
    return {
        "name": spec.name,
        "handler": spec.handler,
        "description": spec.description,
        "pools": dumps(list(spec.pools)),
        "cost": spec.cost,
        "timeout": spec.timeout,
        "retries": spec.retries,
        "retry_delay": spec.retry_delay,
        "retry_backoff": spec.retry_backoff,
        "retry_max_delay": spec.retry_max_delay,
        "interval_default": interval.default if interval else None,
        "interval_min": interval.minimum if interval else None,
        "interval_max": interval.maximum if interval else None,
        "backoff_factor": spec.backoff_factor,
        "max_queue_length": spec.max_queue_length,
        "locks": dumps(list(spec.locks)),
        "simultaneous": spec.simultaneous,
        "prerequisites": dumps(
            [{"type": p.type, "args": p.args, "cache": p.cache} for p in spec.prerequisites]
        ),
        "max_worker_losses": spec.max_worker_losses,
    }


def row_to_spec(row: Any) -> TaskTypeSpec:
    """A spec from a ``task_types`` row (any object with a ``_mapping``)."""
    return _spec(row._mapping)


COLUMNS = tuple(c.name for c in t.task_types.c)
_SELECT_SPECS = f"SELECT {', '.join(COLUMNS)} FROM task_types WHERE {{which}}"


def specs_by_name(conn: Connection, names: Iterable[str]) -> dict[str, TaskTypeSpec]:
    """The specs of the task types among ``names`` that exist (one indexed read; specs
    are parsed once per distinct row, as every submit needs its type's)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    raw = Raw(conn)
    which, params = raw.member("name", wanted)
    rows = raw.all(_SELECT_SPECS.replace("{which}", which), params)
    return {spec.name: spec for spec in map(cached_spec, rows)}


@functools.lru_cache(maxsize=512)
def cached_spec(row: tuple[Any, ...]) -> TaskTypeSpec:
    return _spec(dict(zip(COLUMNS, row, strict=True)))


def _spec(m: Mapping[str, Any]) -> TaskTypeSpec:
    interval = (
        Interval(m["interval_default"], m["interval_min"], m["interval_max"])
        if m["interval_default"] is not None
        else None
    )
    return TaskTypeSpec(
        name=m["name"],
        handler=m["handler"],
        description=m["description"],
        pools=tuple(loads(m["pools"])),
        cost=m["cost"],
        timeout=m["timeout"],
        retries=m["retries"],
        retry_delay=m["retry_delay"],
        retry_backoff=m["retry_backoff"],
        retry_max_delay=m["retry_max_delay"],
        interval=interval,
        backoff_factor=m["backoff_factor"],
        max_queue_length=m["max_queue_length"],
        locks=tuple(loads(m["locks"])),
        simultaneous=bool(m["simultaneous"]),
        prerequisites=tuple(
            Prerequisite(p["type"], p.get("args", {}), float(p.get("cache", 0)))
            for p in loads(m["prerequisites"])
        ),
        max_worker_losses=m["max_worker_losses"],
    )


class TaskTypeStore(StoreBase):
    def put_task_type(self, spec: TaskTypeSpec) -> TaskTypeSpec:
        """Create the task type, or update it in place when it exists."""
        self.put_task_types([spec])
        return spec

    def put_task_types(
        self, specs: Sequence[TaskTypeSpec], pools: Mapping[str, str] | None = None
    ) -> None:
        """Create or update task types and pools in one transaction (all or nothing)."""
        for spec in specs:
            validate_task_type(spec)
        with self._tx() as conn:
            self._put_task_types(conn, specs, pools)

    def _put_task_types(self, conn: Connection, specs: Sequence[TaskTypeSpec],
                        pools: Mapping[str, str] | None) -> None:
        """Write validated specs and pools in the caller's transaction."""
        for spec in specs:
            self._put_task_type(conn, spec)
        for name, description in (pools or {}).items():
            ins = (sqlite_insert if self.sqlite else pg_insert)(t.pools)
            stmt = ins.values(name=name, description=description, created_at=self._now)
            conn.execute(stmt.on_conflict_do_update(
                index_elements=["name"], set_={"description": stmt.excluded.description}))

    def _put_task_type(self, conn: Connection, spec: TaskTypeSpec) -> None:
        for prereq in spec.prerequisites:
            if prereq.type != spec.name and conn.execute(
                select(t.task_types.c.name).where(t.task_types.c.name == prereq.type)
            ).first() is None:
                raise InvalidInput(
                    f"task type {spec.name!r}: prerequisite type {prereq.type!r} does not exist"
                )
        values = spec_to_row(spec)
        ins = (sqlite_insert if self.sqlite else pg_insert)(t.task_types)
        stmt = ins.values(**values, created_at=self._now, updated_at=self._now)
        changes = {k: stmt.excluded[k] for k in values if k != "name"}
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["name"], set_={**changes, "updated_at": self._now}
            )
        )
        self._ensure_pools(conn, spec.pools)

    def _ensure_pools(self, conn: Connection, names: Iterable[str]) -> None:
        ins = (sqlite_insert if self.sqlite else pg_insert)(t.pools)
        for name in names:
            conn.execute(
                ins.values(name=name, created_at=self._now).on_conflict_do_nothing(
                    index_elements=["name"]
                )
            )

    def get_task_type(self, name: str) -> TaskTypeSpec | None:
        with self._read() as conn:
            row = conn.execute(select(t.task_types).where(t.task_types.c.name == name)).first()
        return None if row is None else row_to_spec(row)

    def list_task_types(self) -> list[TaskTypeSpec]:
        with self._read() as conn:
            rows = conn.execute(select(t.task_types).order_by(t.task_types.c.name)).all()
        return [row_to_spec(r) for r in rows]

    def list_pools(self) -> list[str]:
        """Every pool named by a worker or a task type."""
        with self._read() as conn:
            return list(conn.execute(select(t.pools.c.name).order_by(t.pools.c.name)).scalars())

