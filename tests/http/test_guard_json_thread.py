"""JSON bodies past 64 KiB are parsed on a thread, off the event loop (issue 36, item 5).
Apart from test_guard.py, which imports only what 7e1cfb7 had too, so that its tests run
against that version."""

from __future__ import annotations

import threading
from typing import Any

from http_helpers import Api

from taskyard.api.http import jsonio


def test_a_large_body_is_parsed_off_the_event_loop(api: Api, monkeypatch: Any) -> None:
    threads: list[str] = []
    real = jsonio.load_json

    def spy(raw_body: bytes | str) -> Any:
        threads.append(threading.current_thread().name)
        return real(raw_body)

    monkeypatch.setattr(jsonio, "load_json", spy)
    api.post("/api/v1/task-types", json={"name": "t", "handler": "shell:true"})
    jobs = [{"type": "t", "args": {"pad": "x" * 200}} for _ in range(400)]  # ~100 kB
    assert api.post("/api/v1/jobs/batch", json={"jobs": jobs}).status_code == 201
    assert api.post("/api/v1/jobs", json={"type": "t"}).status_code == 201
    loop_thread = threads[-1]  # a small body: parsed on the loop, no thread hop
    assert threads[-2] != loop_thread
