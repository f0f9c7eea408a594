"""Task types and pools: create, update, read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from sqlalchemy import select

from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.model.task_types import validate_task_type
from taskyard.store import schema as t
from taskyard.store.schema.task_type_rows import cached_spec, row_to_spec, spec_to_row

if TYPE_CHECKING:
    from taskyard.store.unit import Tx

_T = t.task_types


class TaskTypes:
    """Task types and the pools they name, in one transaction."""

    READS: ClassVar[frozenset[str]] = frozenset({'get', 'list', 'pools'})
    """Methods a call through the store (``store.task_types.<method>``) runs in a read
    transaction; the others run in a write transaction (:class:`taskyard.store.store.OneShot`)."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    def put(self, spec: TaskTypeSpec) -> TaskTypeSpec:
        """Create the task type, or update it in place when it exists."""
        self.put_many([spec])
        return spec

    def put_many(self, specs: Sequence[TaskTypeSpec],
                 pools: Mapping[str, str] | None = None) -> None:
        """Create or update task types and pools (validated first: all or nothing)."""
        for spec in specs:
            validate_task_type(spec)
        for spec in specs:
            self._put(spec)
        for name, description in (pools or {}).items():
            stmt = self.tx.driver.upsert(t.pools).values(
                name=name, description=description, created_at=self.tx.now)
            self.tx.conn.execute(stmt.on_conflict_do_update(
                index_elements=["name"], set_={"description": stmt.excluded.description}))

    def _put(self, spec: TaskTypeSpec) -> None:
        conn = self.tx.conn
        for prereq in spec.prerequisites:
            if prereq.type != spec.name and conn.execute(
                select(_T.c.name).where(_T.c.name == prereq.type)
            ).first() is None:
                raise InvalidInput(
                    f"task type {spec.name!r}: prerequisite type {prereq.type!r} does not exist"
                )
        values = spec_to_row(spec)
        stmt = self.tx.driver.upsert(_T).values(**values, created_at=self.tx.now,
                                                 updated_at=self.tx.now)
        changes = {k: stmt.excluded[k] for k in values if k != "name"}
        conn.execute(stmt.on_conflict_do_update(
            index_elements=["name"], set_={**changes, "updated_at": self.tx.now}))
        self.ensure_pools(spec.pools)

    def ensure_pools(self, names: Iterable[str]) -> None:
        """Pools come into being when a worker or a type names them."""
        insert = self.tx.driver.upsert(t.pools)
        for name in names:
            self.tx.conn.execute(insert.values(name=name, created_at=self.tx.now)
                                 .on_conflict_do_nothing(index_elements=["name"]))

    def by_name(self, names: Iterable[str]) -> dict[str, TaskTypeSpec]:
        """The specs of the task types among ``names`` that exist (one indexed read; specs
        are parsed once per distinct row, as every submit needs its type's)."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        return {spec.name: spec
                for spec in map(cached_spec, self.tx.driver.task_types(self.tx.raw, wanted))}

    def get(self, name: str) -> TaskTypeSpec | None:
        row = self.tx.conn.execute(select(_T).where(_T.c.name == name)).first()
        return None if row is None else row_to_spec(row)

    def pools(self) -> list[str]:
        """Every pool named by a worker or a task type."""
        return list(self.tx.conn.execute(select(t.pools.c.name).order_by(t.pools.c.name))
                    .scalars())

    def list(self) -> list[TaskTypeSpec]:
        return [row_to_spec(r) for r in self.tx.conn.execute(select(_T).order_by(_T.c.name))]
