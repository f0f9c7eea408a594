"""History rollups (store/transitions/history.py, store/reads/charts.py) on both stores:
what the follower counts from real transitions, once, however many processes run it."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import select
from tests.polling import wait_for
from tests.store.driver import drive

from taskyard.core.history import BOUNDS, combine, depth_sample, series
from taskyard.model.records import ClaimedJob, JobSubmission, TaskTypeSpec
from taskyard.scheduler import history as keeper_module
from taskyard.store import MovableClock, Store, open_store
from taskyard.store.reads.charts import history_keys, totals, window_rows
from taskyard.store.transitions import history
from taskyard.store.transitions.history import (
    add_durations,
    read_durations,
    roll_up,
    sample_depth,
)


def _counted(store: Store, finished: int) -> bool:
    """Rolled up until ``finished`` ends are counted. On PostgreSQL a follower reads events
    in commit order: a transaction still running anywhere on the server (another test's)
    holds the newest back a while — delayed, never lost nor passed."""
    roll_up(store)
    return combine(window_rows(store, "hour")[1].values()).finished == finished


def _fail_b(job: ClaimedJob) -> tuple[str, Any]:
    return ("failed", None) if job.type == "b" else ("succeeded", 1)


def test_the_follower_counts_arrivals_starts_endings_waits_and_cycle_times(
        store: Store, clock: MovableClock) -> None:
    store.task_types.put(TaskTypeSpec("a", "shell:true"))
    store.task_types.put(TaskTypeSpec("b", "shell:true", pools=("gpu", "default"), retries=1))
    store.jobs.submit([JobSubmission("a") for _ in range(3)] + [JobSubmission("b")] * 2)
    clock.advance(2.0)  # every job waits two seconds at least before its first start
    drive(store, _fail_b)
    wait_for("every end counted", lambda: _counted(store, 5))
    _, rows = window_rows(store, "hour")
    total = combine(rows.values())
    assert (total.arrived, total.started, total.succeeded, total.failed) == (5, 7, 3, 4)
    assert total.finished == 5 and sum(total.cycle_hist) == 5
    assert sum(total.wait_hist) == 5 and total.wait_sum >= 5 * 2.0
    assert all(i > 0 for i, n in enumerate(total.wait_hist) if n) and BOUNDS[4] < 2.0
    assert roll_up(store).events == 0  # nothing new: nothing counted twice
    by_key = totals(store)
    assert by_key[("gpu", "b")].failed == 4 and by_key[("default", "a")].succeeded == 3
    assert history_keys(store) == {"pools": ["default", "gpu"], "types": ["a", "b"]}
    _, gpu = window_rows(store, "week", pool="gpu")
    assert combine(gpu.values()).failed == 4
    now, day = window_rows(store, "day", type="a")
    points = series(day, now=now, window="day")
    assert sum(p.counts.succeeded for p in points) == 3
    assert points[-1].wait_p50 is not None and points[-1].wait_p50 >= 1.0


def test_followers_racing_count_each_event_once(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("a", "shell:true"))
    store.jobs.submit([JobSubmission("a") for _ in range(40)])
    drive(store)
    threads = [threading.Thread(target=roll_up, args=(store,), kwargs={"batch": 7})
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_for("every end counted", lambda: _counted(store, 40))
    total = combine(window_rows(store, "hour")[1].values())
    assert (total.arrived, total.started, total.succeeded, total.finished) == (40, 40, 40, 40)


def test_queue_depth_samples_and_summed_durations(store: Store) -> None:
    store.task_types.put(TaskTypeSpec("a", "shell:true", pools=("nobody",)))
    store.jobs.submit([JobSubmission("a") for _ in range(3)])
    sample_depth(store)
    sample_depth(store)
    latest = series(window_rows(store, "hour")[1], now=store.now(), window="hour")[-1]
    assert latest.depth == 3.0 and latest.depth_max == 3 and latest.counts.depth_n == 2
    assert read_durations(store, "cycle") is None
    add_durations(store, "cycle", (0.1, 1.0), [1, 2, 0], 1.5)
    add_durations(store, "cycle", (0.1, 1.0), [0, 1, 1], 3.0)
    summed = read_durations(store, "cycle")
    assert summed is not None and summed.counts == [1, 3, 1] and summed.total == 4.5
    add_durations(store, "cycle", (0.5,), [4, 0], 1.0)  # new bounds: started afresh
    assert read_durations(store, "cycle") == type(summed)([0.5], [4, 0], 1.0)


def test_two_processes_sampling_a_new_bucket_at_once_both_count(
        store: Store, db_url: str) -> None:
    """The second writer waits for the first to commit, then adds to its rows: two
    schedulers sampling the queue depth into a bucket neither had written both inserted
    its row, and the second failed on the unique key (logged as history-failed)."""
    if store.backend == "sqlite":
        pytest.skip("SQLite's writers queue for its write lock: they never overlap")
    store.task_types.put(TaskTypeSpec("a", "shell:true", pools=("nobody",)))
    store.jobs.submit([JobSubmission("a") for _ in range(3)])
    other = open_store(db_url)  # another scheduler's
    failed: list[BaseException] = []

    def second() -> None:
        try:
            sample_depth(other)
        except BaseException as exc:  # reported by the main thread
            failed.append(exc)

    thread = threading.Thread(target=second)
    try:
        with store.write() as tx:  # the first sampler, its rows written, not committed
            history._hold_history(tx)
            now = float(tx.conn.execute(select(store.now_expr)).scalar_one())
            history.add_counts(tx, depth_sample({("nobody", "a"): 3}, now))
            thread.start()
            wait_for("the second sampler to wait for the first",
                     lambda: _waiting_on_a_lock(other) > 0)
        thread.join(60)
    finally:
        other.close()
    assert not thread.is_alive() and failed == []
    assert combine(window_rows(store, "hour")[1].values()).depth_n == 2


def _waiting_on_a_lock(store: Store) -> int:
    with store.read() as tx:
        row = tx.raw.first("SELECT count(*) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND wait_event_type = 'Lock'")
    return int(row[0]) if row else 0


class _Rests(threading.Event):
    """A stop event that records the keeper's rests (and never waits)."""

    def __init__(self, log: list[tuple[str, float]]) -> None:
        super().__init__()
        self.log = log

    def wait(self, timeout: float | None = None) -> bool:
        self.log.append(("rest", timeout or 0.0))
        return self.is_set()


def test_the_keeper_folds_a_slice_per_transaction_and_rests_between_slices(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler's keeper folds :data:`SLICE` events per transaction and rests
    after each (as long as it took): 6,000 events folded at once held the GIL for 55-110
    ms, and the cycles beside it took up to 13-37 ms instead of 0.5 (bench.history
    --beside-cycles)."""
    store.task_types.put(TaskTypeSpec("a", "shell:true"))
    store.jobs.submit([JobSubmission("a") for _ in range(7)])
    drive(store)
    log: list[tuple[str, float]] = []

    def one_slice(store_: Store, *, batch: int, batches: int) -> history.RolledUp:
        assert (batch, batches) == (5, 1)
        rolled = roll_up(store_, batch=batch, batches=batches)
        log.append(("slice", rolled.events if not rolled.caught_up else -1))
        return rolled

    monkeypatch.setattr(keeper_module, "SLICE", 5)
    monkeypatch.setattr(keeper_module, "roll_up", one_slice)
    keeper = keeper_module.HistoryKeeper(store)
    stopped = _Rests(log)
    stopped.set()
    keeper.round(stopped)  # stopping: one slice, then the round ends
    assert [kind for kind, _ in log] in (["slice"], ["slice", "rest"])

    def counted() -> bool:
        keeper.round(_Rests(log))
        return combine(window_rows(store, "hour")[1].values()).finished == 7

    wait_for("every end counted", counted)
    total = combine(window_rows(store, "hour")[1].values())
    assert (total.arrived, total.started, total.succeeded) == (7, 7, 7)  # each once
    slices = [i for i, (kind, _) in enumerate(log) if kind == "slice"]
    assert len(slices) >= 21 // 5  # 3 events a job, 5 a slice
    for i in slices:
        full = log[i][1] == 5
        # After a full slice it rests before the next; after the last, the round ends.
        assert (i + 1 < len(log) and log[i + 1][0] == "rest") == full, log
