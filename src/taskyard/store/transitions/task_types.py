"""Task types and pools: create, update, read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from taskyard.model.errors import InvalidInput
from taskyard.model.records import TaskTypeSpec
from taskyard.model.task_types import validate_task_type
from taskyard.store.schema.task_type_rows import cached_spec, spec_to_row

if TYPE_CHECKING:
    from taskyard.store.unit import Tx



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
            self.tx.driver.put_pool(self.tx.raw, name, description)

    def _put(self, spec: TaskTypeSpec) -> None:
        missing = {p.type for p in spec.prerequisites if p.type != spec.name}
        known = self.tx.driver.task_type_names(self.tx.raw, sorted(missing)) if missing else set()
        for prereq in spec.prerequisites:
            if prereq.type != spec.name and prereq.type not in known:
                raise InvalidInput(
                    f"task type {spec.name!r}: prerequisite type {prereq.type!r} does not exist"
                )
        self.tx.driver.put_task_type(self.tx.raw, spec_to_row(spec))
        self.ensure_pools(spec.pools)

    def ensure_pools(self, names: Iterable[str]) -> None:
        """Pools come into being when a worker or a type names them."""
        self.tx.driver.ensure_pools(self.tx.raw, names)

    def by_name(self, names: Iterable[str]) -> dict[str, TaskTypeSpec]:
        """The specs of the task types among ``names`` that exist (one indexed read; specs
        are parsed once per distinct row, as every submit needs its type's)."""
        wanted = sorted(set(names))
        if not wanted:
            return {}
        return {spec.name: spec
                for spec in map(cached_spec, self.tx.driver.task_types(self.tx.raw, wanted))}

    def get(self, name: str) -> TaskTypeSpec | None:
        rows = self.tx.driver.read_task_types(self.tx.raw, name)
        return cached_spec(tuple(rows[0])) if rows else None

    def pools(self) -> list[str]:
        """Every pool named by a worker or a task type."""
        return self.tx.driver.pool_names(self.tx.raw)

    def list(self) -> list[TaskTypeSpec]:
        return [cached_spec(tuple(r)) for r in self.tx.driver.read_task_types(self.tx.raw)]
