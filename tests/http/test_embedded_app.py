"""An app served from a thread of a process that goes on (``taskyard up --http``, a
program that embeds the API, these tests) leaves that process's garbage collector alone:
freezing the heap is for a process the server owns (``HttpServer.run``)."""

from __future__ import annotations

import gc

from http_helpers import Api, start_api

from taskyard.api.http.context import Settings


def test_an_app_served_from_a_thread_does_not_freeze_the_heap_of_its_process(
        db_url: str) -> None:
    frozen = gc.get_freeze_count()
    served: Api = start_api(db_url, Settings())
    try:
        assert served.get("/healthz").status_code == 200
        # Frozen objects stay out of the collector's reach until unfrozen: a server that
        # froze its host at start (and collected its whole heap first, each time) would
        # change this count while it serves.
        assert gc.get_freeze_count() == frozen
    finally:
        served.stop()
        served.yard.close()
    assert gc.get_freeze_count() == frozen
