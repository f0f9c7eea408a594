"""Real servers for the bridges' tests, one of each per test session (per xdist worker),
started on first use and stopped whatever happens."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.bridges.servers import (
    RABBITMQ_SERVER,
    REDIS_SERVER,
    CeleryWorker,
    RabbitBroker,
    RedisServer,
    missing,
)


@pytest.fixture(scope="session")
def rabbitmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RabbitBroker]:
    why = missing(RABBITMQ_SERVER, "/usr/bin/epmd")
    if why:
        pytest.fail(why)
    broker = RabbitBroker(tmp_path_factory.mktemp("rabbitmq"))
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    why = missing(REDIS_SERVER)
    if why:
        pytest.fail(why)
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def celery_worker(redis_server: RedisServer,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryWorker]:
    """A Celery worker on redis (broker: db 0, results: db 1)."""
    base = redis_server.url.rsplit("/", 1)[0]
    worker = CeleryWorker(tmp_path_factory.mktemp("celery"), f"{base}/0", f"{base}/1")
    try:
        yield worker
    finally:
        worker.stop()
