"""Handlers of the demo: small real work, so the summary shows real results."""

from __future__ import annotations

import hashlib
import os
import random
import time
from typing import Any


def checksum(size_kb: int = 64, seed: int = 0) -> dict[str, Any]:
    """Generate data and hash it."""
    data = random.Random(seed).randbytes(size_kb * 1024)
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()[:16]}


def word_count(text: str) -> dict[str, int]:
    words = text.split()
    return {"words": len(words), "distinct": len(set(words))}


def compile_target(target: str) -> dict[str, Any]:
    time.sleep(0.2)
    return {"artifact": f"build/{target}.tar.gz", "target": target}


def run_tests(artifact: dict[str, Any], suite: str) -> dict[str, Any]:
    time.sleep(0.1)
    return {"suite": suite, "artifact": artifact["artifact"], "passed": 40 + len(suite)}


def package(build_job: int, reports: int = 0) -> dict[str, Any]:
    return {"package": f"app-{build_job}.deb", "worker_pid": os.getpid()}


def flaky(fail_first: int = 1) -> str:
    attempt = int(os.environ.get("TASKYARD_ATTEMPT", "1"))
    if attempt <= fail_first:
        raise RuntimeError(f"transient failure on attempt {attempt}")
    return f"ok on attempt {attempt}"
