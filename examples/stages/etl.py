"""Stages in a Python handler: ``python:etl:run``.

Three stages. Each stage's result is stored when it ends; when the job runs again
(a retry, a lost worker, ``taskyard job retry``), finished stages are not run a
second time: ``stage()`` returns their stored result. ``load`` fails on the first
attempt on purpose (``fail_first``), so one run shows the resume.
"""

from __future__ import annotations

from typing import Any

from taskyard import current_job, stage


def extract(rows: int) -> list[int]:
    print(f"extract: reading {rows} rows")
    return [n * n for n in range(1, rows + 1)]


def transform(values: list[int]) -> int:
    print(f"transform: summing {len(values)} values")
    return sum(values)


def load(total: int, fail_first: bool) -> dict[str, Any]:
    job = current_job()
    if fail_first and job is not None and job.attempt == 1:
        print("load: the warehouse is unreachable")
        raise ConnectionError("warehouse unreachable (attempt 1 fails on purpose)")
    print(f"load: storing {total}")
    return {"stored": total}


def run(rows: int = 4, fail_first: bool = True) -> dict[str, Any]:
    job = current_job()  # None when called outside a worker: stage() then just calls
    resumed = sorted(job.done) if job is not None else []
    values = stage("extract", extract, rows)
    total = stage("transform", transform, values)
    loaded = stage("load", load, total, fail_first)
    return {"total": total, **loaded, "attempt": job.attempt if job else None,
            "resumed_after": resumed}
