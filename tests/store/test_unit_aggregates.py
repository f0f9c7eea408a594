"""Store.<aggregate> (one operation, one transaction) finds each aggregate's class from
the Tx property alone: the module named after it, the class its return type."""

from __future__ import annotations

from functools import cached_property

import pytest

from taskyard.store import Store
from taskyard.store.unit import Tx, aggregate_class

NAMES = sorted(n for n, v in vars(Tx).items() if isinstance(v, cached_property))


def test_every_aggregate_property_is_found() -> None:
    assert len(NAMES) >= 15


@pytest.mark.parametrize("name", NAMES)
def test_the_class_found_is_the_one_the_unit_of_work_builds(store: Store, name: str) -> None:
    with store.read() as tx:
        assert type(getattr(tx, name)) is aggregate_class(name)


def test_a_name_that_is_no_aggregate_is_refused() -> None:
    with pytest.raises(KeyError):
        aggregate_class("raw")
