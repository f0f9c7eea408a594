"""An existing Celery fleet's tasks: it knows nothing of taskyard.

    celery -A tasks worker --loglevel INFO
"""

from __future__ import annotations

import os

from celery import Celery

app = Celery("example", broker=os.environ.get("BROKER", "redis://127.0.0.1:6379/0"),
             backend=os.environ.get("RESULTS", "redis://127.0.0.1:6379/1"))


@app.task(name="tasks.add")
def add(x: int, y: int) -> int:
    return x + y


@app.task(name="tasks.load_git")
def load_git(url: str) -> dict[str, object]:
    if not url.startswith("https://"):
        raise ValueError(f"not an https origin: {url}")
    return {"url": url, "eventful": True}
