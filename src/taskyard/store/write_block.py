"""The block of :meth:`taskyard.store.store.Store.write`: the driver's transaction, the
unit of work in it, its end, and an error that says the schema is missing turned into
:class:`~taskyard.model.errors.SchemaMissing`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from taskyard.store.unit import Tx

if TYPE_CHECKING:
    from taskyard.store.store import Store


class WriteBlock:
    """:meth:`Store.write`'s block: the driver's transaction, the unit of work in it, and
    an error that says the schema is missing turned into SchemaMissing. A class, not a
    generator: a lone submit's whole unit is a few dozen microseconds of Python, and a
    generator's context manager costs several calls more at each end."""

    __slots__ = ("_store", "_tx", "_within")

    def __init__(self, store: Store) -> None:
        self._store = store
        self._within = store.driver.write(store.engine)
        self._tx: Tx | None = None

    def __enter__(self) -> Tx:
        try:
            conn = self._within.__enter__()
        except Exception as exc:
            missing = self._store._schema_missing(exc)
            if missing is None:
                raise
            raise missing from exc
        self._tx = Tx(self._store, conn)
        return self._tx

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: Any) -> None:
        raised = error
        tx = self._tx
        assert tx is not None
        try:
            try:
                if kind is None:
                    tx.finish(commit=True)
            finally:
                tx.close()
        except BaseException as exc:  # the unit ends with it: the transaction rolls back
            kind, error, trace = type(exc), exc, exc.__traceback__
        try:
            self._within.__exit__(kind, error, trace)
        except BaseException as exc:  # the same error again, or one of ending the unit
            error = exc
        if error is None:
            return
        missing = self._store._schema_missing(error) if isinstance(error, Exception) else None
        if missing is not None:
            raise missing from error
        if error is not raised:  # else the block's own error goes on as it was raised
            raise error
