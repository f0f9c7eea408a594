"""A worker takes each attempt a wake-up carried once, whichever way it came first."""

from __future__ import annotations

from collections.abc import Sequence

from taskyard.model.records import ClaimedJob
from taskyard.worker.deliveries import Deliveries


def job(job_id: int, attempt: int = 1, priority: int = 0) -> ClaimedJob:
    return ClaimedJob(job_id, attempt, "t", "python:m:f", {}, None, priority=priority)


def parse(payloads: Sequence[str]) -> list[ClaimedJob] | None:
    if not payloads or not all(payloads):
        return None
    return [job(int(k), priority=int(k) % 3) for p in payloads for k in p.split(",")]


def test_jobs_are_taken_once_in_placement_order() -> None:
    box = Deliveries(parse)
    assert box.add(["1,2", "3"])
    assert [j.job_id for j in box.take()] == [2, 1, 3]  # priority, then id
    assert box.take() == []
    assert box.add(["2"])  # delivered again: stale
    assert box.take() == []


def test_a_payload_without_jobs_asks_for_a_look() -> None:
    box = Deliveries(parse)
    assert not box.add(["4", ""])
    assert not box.add([])  # a wake-up with no payload at all (SQLite)
    assert box.take() == []


def test_attempts_a_look_found_first_are_not_taken_again() -> None:
    box = Deliveries(parse)
    box.taken([(5, 1)])
    assert box.add(["5,6"])
    assert [j.job_id for j in box.take()] == [6]


def test_it_remembers_a_bounded_number_of_attempts() -> None:
    box = Deliveries(parse, remember=2)
    box.taken([(1, 1), (2, 1), (3, 1)])
    assert box.add(["1,3"])
    assert [j.job_id for j in box.take()] == [1]  # 1 was forgotten, 3 is remembered
