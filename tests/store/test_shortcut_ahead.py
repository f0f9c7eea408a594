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


def choose(shortcuts: Shortcuts) -> tuple[int, int] | None:
    chosen = shortcuts.choose(COLUMNS, job())
    return None if chosen is None else (chosen.worker_id, len(chosen.bases))


def test_the_bases_agreeing_both_go_and_the_one_that_held_grows() -> None:
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=4)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())
    ahead = shortcuts.ahead
    chosen = shortcuts.choose(COLUMNS, job())
    assert ahead is not None and chosen is not None
    assert chosen.texts == (ahead.text, idle.text)
    shortcuts.placed(chosen, 2, COLUMNS, job())  # the idle one held: the job ran and ended
    assert shortcuts.ahead is not None
    assert json.loads(shortcuts.ahead.text)[1] == [[0, "t", 1, 1, "[]", 1]]


def test_the_bases_disagreeing_the_one_that_failed_last_gives_way() -> None:
    shortcuts = Shortcuts()
    idle = basis([worker(1, capacity=1), worker(2, capacity=1)], [])
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())  # on worker 1: ahead, worker 1 is full
    assert choose(shortcuts) == (1, 1)  # the idle basis leads at first
    chosen = shortcuts.choose(COLUMNS, job())
    assert chosen is not None
    shortcuts.refused(chosen)
    assert shortcuts.basis is None and shortcuts.ahead is None and shortcuts.lead_ahead
    shortcuts.learn(CycleReads(idle.snapshot, [], []), idle.text)
    shortcuts.to_be_placed(COLUMNS, job())
    assert choose(shortcuts) == (2, 1)  # now the basis ahead does
