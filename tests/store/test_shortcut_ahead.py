"""PostgreSQL's lone-submit guesses (store/postgresql/shortcuts.py), as values: the text
the snapshot reads after a placement, and which basis a submit goes by. The database
side (the texts match what PostgreSQL writes) is tests/store/test_submit_shortcuts.py."""

from __future__ import annotations

import json
from typing import Any

from taskyard.store.driver.cycle_params import CycleReads, Snapshot
from taskyard.store.postgresql.shortcuts import Basis, Shortcuts, advance

COLUMNS = ("type", "priority", "pools", "cost", "locks", "rate_key", "run_after", "graph_id")
POOLS = json.dumps(["default"])


def job(type_: str = "t", cost: int = 1, locks: str = "[]") -> tuple[Any, ...]:
    return (type_, 0, POOLS, cost, locks, None, None, None)


def basis(workers: list[Any], active: list[Any]) -> Basis:
    doc = [workers or None, active or None, None, None]
    return Basis(json.dumps(doc, ensure_ascii=False), Snapshot(workers, active, []))


def worker(id_: int, capacity: int = 4) -> list[Any]:
    return [id_, f"w{id_}", POOLS, capacity, 0, 0]


def test_a_job_joins_its_workers_row_of_its_type() -> None:
    before = basis([worker(1), worker(2)], [[0, "t", 1, 2, "[]", 2], [0, "t", 2, 1, "[]", 1]])
    after = advance(before, COLUMNS, job(cost=3), 1)
    assert after is not None
    assert json.loads(after.text)[1] == [[0, "t", 1, 5, "[]", 3], [0, "t", 2, 1, "[]", 1]]
    assert after.snapshot.active == json.loads(after.text)[1]
    assert after.snapshot.workers is before.snapshot.workers


def test_a_first_job_on_a_worker_goes_by_its_id() -> None:
    before = basis([worker(1), worker(2), worker(3)],
                   [[0, "t", 1, 1, "[]", 1], [0, "t", 3, 1, "[]", 1]])
    after = advance(before, COLUMNS, job(), 2)
    assert after is not None
    assert [r[2] for r in json.loads(after.text)[1]] == [1, 2, 3]
    # As PostgreSQL's json_build_array and json_agg write: ", " between items.
    assert after.text.startswith('[[[1, "w1", "[\\"default\\"]", 4, 0, 0], ')


def test_an_idle_snapshot_gets_its_first_row() -> None:
    after = advance(basis([worker(1)], []), COLUMNS, job(), 1)
    assert after is not None and json.loads(after.text)[1] == [[0, "t", 1, 1, "[]", 1]]
    assert after.text.endswith("]], null, null]")


def test_where_the_order_follows_the_collation_there_is_no_text() -> None:
    busy = basis([worker(1)], [[0, "t", 1, 1, "[]", 1]])
    assert advance(busy, COLUMNS, job("u"), 1) is None  # beside the worker's "t" row
    assert advance(busy, COLUMNS, job(locks='[{"key": "k"}]'), 1) is None


def guessed(shortcuts: Shortcuts) -> list[tuple[str, int]]:
    """The guesses for the next job: which basis (by name) and the worker from it."""
    names = {id(shortcuts.ahead): "ahead", id(shortcuts.last): "last",
             id(shortcuts.basis): "basis"}
    return [(names[id(g.basis)], g.worker_id) for g in shortcuts.choose(COLUMNS, job())]


def test_an_idle_queue_read_guesses_it_and_the_job_ahead() -> None:
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=4)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())  # the submit's cycle places it on worker 1
    assert guessed(shortcuts) == [("ahead", 1), ("basis", 1)]
    ahead = shortcuts.ahead
    assert ahead is not None and json.loads(ahead.text)[1] == [[0, "t", 1, 1, "[]", 1]]


def test_each_guess_has_the_worker_the_planner_gives_from_it() -> None:
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=1), worker(2, capacity=1)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())  # on worker 1, which is then full
    assert guessed(shortcuts) == [("ahead", 2), ("basis", 1)]


def test_what_a_placement_leaves_grows_from_the_guess_that_held() -> None:
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=8)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())
    by_basis = shortcuts.choose(COLUMNS, job())[1]
    shortcuts.placed(by_basis, COLUMNS, job())  # the first job had ended
    assert shortcuts.last is None and shortcuts.ahead is not None
    assert json.loads(shortcuts.ahead.text)[1] == [[0, "t", 1, 1, "[]", 1]]
    by_ahead = shortcuts.choose(COLUMNS, job())[0]
    shortcuts.placed(by_ahead, COLUMNS, job())  # it runs on: two jobs, or the last alone
    assert json.loads(shortcuts.ahead.text)[1] == [[0, "t", 1, 2, "[]", 2]]
    assert shortcuts.last is not None
    assert json.loads(shortcuts.last.text)[1] == [[0, "t", 1, 1, "[]", 1]]
    assert guessed(shortcuts) == [("ahead", 1), ("last", 1), ("basis", 1)]
    shortcuts.refused()
    assert guessed(shortcuts) == []


def test_a_busy_stream_keeps_no_chain_of_guesses() -> None:
    """Each placement's ``ahead`` is built from the last: only the idle basis keeps what
    it grew (``last``), else 10,000 submits to a busy worker would keep 10,000 texts."""
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=100_000)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())
    first = shortcuts.ahead
    for _ in range(50):
        by_ahead = shortcuts.choose(COLUMNS, job())[0]
        assert by_ahead.basis is shortcuts.ahead
        shortcuts.placed(by_ahead, COLUMNS, job())
    kept = shortcuts.basis
    assert first is not None and first.grown == {} and kept is not None
    assert len(kept.grown) == 1  # the one ``last``, the same after every placement
    assert shortcuts.last is next(iter(kept.grown.values()))
    assert shortcuts.last is not None and shortcuts.last.grown == {}


def test_an_idle_worker_gets_the_same_guess_ahead_each_time() -> None:
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=8)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())
    aheads = []
    for _ in range(3):
        by_basis = shortcuts.choose(COLUMNS, job())[-1]
        assert by_basis.basis is shortcuts.basis
        shortcuts.placed(by_basis, COLUMNS, job())  # each job ended before the next
        aheads.append(shortcuts.ahead)
    assert aheads[0] is aheads[1] is aheads[2]  # and so are its planner's answers
