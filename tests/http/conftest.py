"""Fixtures of the HTTP tests (helpers in http_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from http_helpers import Api, start_api

from taskyard.api.http.context import Settings


@pytest.fixture
def api(db_url: str) -> Iterator[Api]:
    # Tests refuse hundreds of tokens from one address on purpose: no throttling here
    # (test_guard.py tests it with the default budget).
    started = start_api(db_url, Settings(heartbeat=0.5, max_body=1024 * 1024,
                                         auth_failures=100_000))
    yield started
    started.stop()
    started.yard.close()
