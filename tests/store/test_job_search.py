"""Jobs search (store/reads/job_search.py) on both stores: every filter, both orders,
keyset pages that neither skip nor repeat, the bounded windows of filters no index
serves, time ranges."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import insert

from taskyard.model.errors import InvalidInput
from taskyard.store import Store
from taskyard.store import schema as t
from taskyard.store.reads import job_search
from taskyard.store.reads.job_pages import list_job_page
from taskyard.store.reads.job_search import JobQuery, Position, search_jobs

STATES = ("succeeded", "failed", "canceled", "pending", "waiting")


def _fill(store: Store, count: int) -> list[dict[str, Any]]:
    """``count`` jobs with ids 1..count, created one second apart from t=1000, states,
    types, labels, pools and args cycling; ended jobs end 5 s after creation in
    reverse order of their ids; each ended job has an attempt on worker w<id % 3>."""
    rows = []
    with store.engine.begin() as conn:
        conn.execute(insert(t.task_types), [
            {"name": n, "handler": "shell:true", "created_at": 0, "updated_at": 0}
            for n in ("build", "test", "deploy")])
        for i in range(1, count + 1):
            state = STATES[i % len(STATES)]
            ended = state in ("succeeded", "failed", "canceled")
            rows.append({
                "id": i, "type": ("build", "test", "deploy")[i % 3], "state": state,
                "pools": json.dumps(["gpu", "default"] if i % 4 == 0 else ["default"]),
                "args": json.dumps({"target": f"Linux-{i}" if i % 2 else f"mac-{i}"}),
                "label": f"step-{i % 5}" if i % 2 == 0 else None,
                "attempt": 1 if ended else 0, "created_at": 1000.0 + i,
                "finished_at": 2000.0 - i if ended else None})
        conn.execute(insert(t.jobs), rows)
        conn.execute(insert(t.attempts), [
            {"job_id": r["id"], "attempt": 1, "worker_name": f"w{r['id'] % 3}",
             "state": r["state"], "dispatched_at": r["created_at"],
             "started_at": r["created_at"], "finished_at": r["finished_at"]}
            for r in rows if r["attempt"]])
    return rows


def _all(store: Store, query: JobQuery, limit: int = 7) -> tuple[list[int], int]:
    """Every match, page after page; and how many pages it took."""
    found: list[int] = []
    page = search_jobs(store, query, limit=limit)
    pages = 1
    while True:
        assert len(page.items) <= limit
        found.extend(j.id for j in page.items)
        if page.next is None:
            return found, pages
        page = search_jobs(store, query, after=page.next, limit=limit)
        pages += 1


def _expect(rows: list[dict[str, Any]], keep: Any, order: str = "-created") -> list[int]:
    chosen = [r for r in rows if keep(r)]
    if order.endswith("finished"):
        chosen = [r for r in chosen if r["finished_at"] is not None]
        chosen.sort(key=lambda r: (r["finished_at"], r["id"]), reverse=order[0] == "-")
    else:
        chosen.sort(key=lambda r: r["id"], reverse=order[0] == "-")
    return [r["id"] for r in chosen]


CASES: list[tuple[str, JobQuery, Any]] = [
    ("everything", JobQuery(), lambda r: True),
    ("one state", JobQuery(states=("failed",)), lambda r: r["state"] == "failed"),
    ("two states", JobQuery(states=("failed", "pending")),
     lambda r: r["state"] in ("failed", "pending")),
    ("a type alone", JobQuery(types=("test",)), lambda r: r["type"] == "test"),
    ("type and state", JobQuery(types=("test", "build"), states=("succeeded",)),
     lambda r: r["type"] in ("test", "build") and r["state"] == "succeeded"),
    ("label", JobQuery(label="step-2"), lambda r: r["label"] == "step-2"),
    ("label and state", JobQuery(label="step-2", states=("failed",)),
     lambda r: r["label"] == "step-2" and r["state"] == "failed"),
    ("pool", JobQuery(pool="gpu"), lambda r: "gpu" in r["pools"]),
    ("pool, case", JobQuery(pool="GPU"), lambda r: False),
    ("worker", JobQuery(worker="w1"), lambda r: r["attempt"] and r["id"] % 3 == 1),
    ("text in args", JobQuery(text="linux-1"),
     lambda r: "linux-1" in r["args"].lower()),
    ("text in label", JobQuery(text="STEP-4"), lambda r: r["label"] == "step-4"),
    ("text with LIKE marks", JobQuery(text="%_"), lambda r: False),
    ("ids", JobQuery(ids=(3, 5, 999)), lambda r: r["id"] in (3, 5)),
    ("created range", JobQuery(since=1010.0, until=1030.0),
     lambda r: 1010 <= r["created_at"] < 1030),
    ("range and type", JobQuery(since=1010.0, types=("deploy",)),
     lambda r: r["created_at"] >= 1010 and r["type"] == "deploy"),
]


@pytest.mark.parametrize("order", ["-created", "created", "-finished", "finished"])
@pytest.mark.parametrize(("name", "query", "keep"), CASES, ids=[c[0] for c in CASES])
def test_every_filter_in_every_order_pages_without_gaps(
        store: Store, order: str, name: str, query: JobQuery, keep: Any, *,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Small bounds, so that the windows' paging is exercised on 60 jobs.
    monkeypatch.setattr(job_search, "WINDOW", 9)
    monkeypatch.setattr(job_search, "BUDGET", 9)
    rows = _fill(store, 60)
    query = JobQuery(**{**{f: getattr(query, f) for f in query.__slots__}, "sort": order})
    if order.endswith("finished") and (query.since or query.until):
        keep_time = keep
        keep = lambda r: keep_time({**r, "created_at": r["finished_at"] or -1})  # noqa: E731
    found, _ = _all(store, query)
    assert found == _expect(rows, keep, order), name


def test_a_page_of_a_rare_match_stops_at_its_window_and_goes_on(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_search, "WINDOW", 10)
    _fill(store, 60)
    page = search_jobs(store, JobQuery(text="linux-3"), limit=5)
    # "Linux-3" is in the args of jobs 3 and 31 to 39 (odd ids): none in ids 51 to 60,
    # the first window. The page says so, and where to go on.
    assert page.items == [] and not page.complete and page.next == Position(51)
    found, pages = _all(store, JobQuery(text="linux-3"), limit=5)
    assert found == [39, 37, 35, 33, 31, 3] and pages == 6
    # Indexed filters need no window: one page, complete.
    page = search_jobs(store, JobQuery(states=("failed",)), limit=100)
    assert page.complete and page.next is None and len(page.items) == 12


def test_refusals_name_the_field(store: Store) -> None:
    with pytest.raises(InvalidInput, match="state: unknown state 'asleep'"):
        search_jobs(store, JobQuery(states=("asleep",)))
    with pytest.raises(InvalidInput, match="sort"):
        search_jobs(store, JobQuery(sort="size"))
    with pytest.raises(InvalidInput, match="q: empty"):
        search_jobs(store, JobQuery(text="  "))
    with pytest.raises(InvalidInput, match="limit"):
        search_jobs(store, JobQuery(), limit=0)
    assert search_jobs(store, JobQuery()).items == []


def test_the_list_of_one_type_walks_per_state(store: Store) -> None:
    rows = _fill(store, 40)
    wanted = _expect(rows, lambda r: r["type"] == "test")
    found: list[int] = []
    after = None
    while True:
        page = list_job_page(store, type="test", limit=3, after=after)
        found.extend(j.id for j in page.items)
        if page.next_after is None:
            break
        after = page.next_after
    assert found == wanted
    oldest = list_job_page(store, type="test", limit=100, oldest_first=True)
    assert [j.id for j in oldest.items] == wanted[::-1]
