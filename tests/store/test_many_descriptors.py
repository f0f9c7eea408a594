"""A process holding over a thousand descriptors (a server with a thousand connections)
opens its store's connections and listeners past ``select``'s limit (1,024): the
checkout's look at a pooled connection and every listener's wait use poll(2), which has
no such limit (store/interrupt.py:readable)."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import pytest

from taskyard.store import open_store

HELD = 1100


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit != resource.RLIM_INFINITY and limit < HELD + 100:
        pytest.skip(f"{limit} descriptors at most here")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HELD)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)


def test_a_store_opened_past_a_thousand_descriptors_reads_and_listens(
        db_url: str, many_descriptors: None) -> None:
    store = open_store(db_url)
    try:
        assert store.jobs.list() == []
        assert store.jobs.list() == []  # a pooled connection, looked at on checkout
        listener = store.listener("worker.1")
        try:
            assert listener.wait(0.2) is False
            listener.interrupt()
            assert listener.wait(60) is False
        finally:
            listener.close()
    finally:
        store.close()
