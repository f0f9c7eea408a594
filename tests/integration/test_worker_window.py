"""A real worker registers the most it accepts queued (``--prefetch``) with no window of
its own, so the cycle lends it its pool's (core/prefetch.py:provisional_windows); the
report of its first paced end declares its own window, which ends the loan. A handler's
first run in its child is no pace (worker/child.py): the loan outlasts it."""

from __future__ import annotations

import time

from sqlalchemy import text

from conftest import Cluster


def _window(cluster: Cluster, name: str) -> tuple[int, int | None] | None:
    with cluster.yard.store.engine.connect() as conn:
        row = conn.execute(text("SELECT prefetch, unpaced_prefetch FROM workers "
                                "WHERE name = :n AND state = 'active'"), {"n": name}).first()
    return None if row is None else (int(row[0]), row[1])


def _until(check, what: str, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while (found := check()) is None or found is False:
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f}s"
        time.sleep(0.02)
    return found


def test_a_worker_holds_a_lent_window_until_its_first_paced_job_ends(cluster: Cluster) -> None:
    y = cluster.yard
    y.add_task_type("echo", "python:handlers_for_tests:echo")
    cluster.add_worker("w1", capacity=1)  # --prefetch's default, 512
    assert _until(lambda: _window(cluster, "w1"), "w1 registered") == (0, 512)
    cluster.add_scheduler()
    assert y.wait(y.submit("echo", {"n": 1}), 60).state == "succeeded"
    # Its end was reported (the job reads succeeded) with no window: echo's first run.
    assert _window(cluster, "w1") == (0, 512)
    assert y.wait(y.submit("echo", {"n": 2}), 60).state == "succeeded"
    declared = _until(lambda: (w := _window(cluster, "w1")) is not None and w[1] is None and w,
                      "w1's own window declared")
    assert declared[1] is None and 0 <= declared[0] <= 512


def test_a_worker_without_prefetch_is_never_lent_one(cluster: Cluster) -> None:
    cluster.add_worker("w0", capacity=1, prefetch=0)  # `taskyard worker --prefetch 0`
    assert _until(lambda: _window(cluster, "w0"), "w0 registered") == (0, None)
