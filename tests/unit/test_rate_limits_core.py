"""Rate limits (core/rate_limits.py): parsing, the sliding-log rule, and its property —
never more starts in any window than the limit — through the real Planner."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.explain import from_decision
from taskyard.core.locks import LockClaim
from taskyard.core.placement import (
    Candidate,
    Placement,
    Planner,
    Skip,
    SkipReason,
    WorkerSlot,
)
from taskyard.core.rate_limits import (
    RateBook,
    RateLimit,
    RateLimitError,
    budget,
    check_rate_key,
    describe,
    parse_rate_limit,
    render_rate_key,
    reopens_at,
)


@pytest.mark.parametrize(("text", "limit"), [
    ("10/s", RateLimit(10, 1.0)), (" 100 / m ", RateLimit(100, 60.0)),
    ("1/h", RateLimit(1, 3600.0)),
])
def test_rate_limits_read_as_users_write_them(text: str, limit: RateLimit) -> None:
    assert parse_rate_limit(text) == limit
    assert parse_rate_limit(limit.encode()) == limit


@pytest.mark.parametrize(("text", "why"), [
    ("10", "not a rate limit"), ("10/d", "not a rate limit"), ("ten/s", "not a rate limit"),
    (10, "not a rate limit"), ("0/s", "at least 1 start"), ("-1/s", "not a rate limit"),
])
def test_bad_rate_limits_name_the_field(text: object, why: str) -> None:
    with pytest.raises(RateLimitError, match=f"--rate-limit: .*{why}"):
        parse_rate_limit(text, field="--rate-limit")


def test_rate_keys_are_templates_over_args() -> None:
    check_rate_key("tenant:{tenant}")
    assert render_rate_key("tenant:{tenant}", {"tenant": 7}) == "tenant:7"
    assert render_rate_key("{region}/{tenant}", {"tenant": "a", "region": "eu"}) == "eu/a"
    for bad, why in (("", "empty"), ("t:{tenant", "expected '}'"), ("{0}", "must name")):
        with pytest.raises(RateLimitError, match=why):
            check_rate_key(bad)
    with pytest.raises(RateLimitError, match="args have no 'tenant'"):
        render_rate_key("tenant:{tenant}", {})
    with pytest.raises(RateLimitError, match="must name"):
        render_rate_key("{a.b}", {"a": 1})


def test_budget_counts_the_starts_inside_the_window_only() -> None:
    limit = RateLimit(2, 1.0)
    assert budget(limit, [], 10.0) == 2
    assert budget(limit, [9.0, 9.5], 10.0) == 1  # 9.0 is exactly one window ago: out
    assert budget(limit, [9.5, 9.9, 9.95], 10.0) == -1  # a lowered limit: over budget
    assert reopens_at(limit, [9.5], 10.0) is None
    assert reopens_at(limit, [9.9, 9.5], 10.0) == 10.5
    assert reopens_at(limit, [9.5, 9.9, 9.95], 10.0) == pytest.approx(10.9)


def test_a_refusal_names_the_limit_the_key_and_the_starts() -> None:
    limit = RateLimit(2, 1.0)
    text = describe("mail", "tenant:7", limit, [9.5, 9.9], 10.0)
    assert text == ("2/s of mail on key tenant:7: 2 starts in the last 1s; "
                    "the next may start in 0.5s")
    assert describe("mail", "", RateLimit(5, 60.0), [9.0], 10.0) == (
        "5/m of mail: 1 starts in the last 1m")


def _book(limits: dict[str, RateLimit], now: float,
          log: dict[tuple[str, str], list[float]], reads: list[tuple[str, str]]) -> RateBook:
    """A book whose recent starts come from ``log`` (as the store keeps them)."""
    def recent(type_name: str, key: str, limit: RateLimit) -> list[float]:
        reads.append((type_name, key))
        window = [at for at in log[type_name, key] if at > now - limit.per]
        return sorted(window, reverse=True)[:limit.count]
    return RateBook(limits, now, recent)


def test_the_planner_skips_a_job_whose_key_spent_its_budget_and_explain_says_so() -> None:
    log: dict[tuple[str, str], list[float]] = defaultdict(list)
    log["mail", "t1"] = [99.5]
    reads: list[tuple[str, str]] = []
    book = _book({"mail": RateLimit(2, 1.0)}, 100.0, log, reads)
    planner = Planner.from_snapshot([WorkerSlot(1, "w", ("default",), 10)], [], rates=book)
    decisions = [planner.offer(Candidate(i, t, 0, ("default",), rate_key=k))
                 for i, (t, k) in enumerate([("mail", "t1"), ("mail", "t1"), ("mail", "t2"),
                                             ("other", None), ("mail", "t1")], 1)]
    assert [type(d).__name__ for d in decisions] == [
        "Placement", "Skip", "Placement", "Placement", "Skip"]
    skip = decisions[1]
    assert isinstance(skip, Skip) and skip.reason is SkipReason.RATE_LIMITED
    reason = from_decision(skip, ahead=0, worker_names={})
    assert reason.code == "rate_limited"
    assert reason.message.startswith("rate limit 2/s of mail on key t1: 2 starts in the last 1s")
    assert reads == [("mail", "t1"), ("mail", "t2")]  # each key read once, on first use
    assert book.started == [("mail", "t1"), ("mail", "t2")]


def test_jobs_without_a_key_share_their_types_budget() -> None:
    reads: list[tuple[str, str]] = []
    book = _book({"mail": RateLimit(1, 60.0)}, 0.0, defaultdict(list), reads)
    assert book.refusal("mail", None) is None
    book.start("mail", None)
    book.start("other", "x")  # not limited: nothing recorded
    assert book.refusal("mail", None) == "1/m of mail: 1 starts in the last 1m; " \
        "the next may start in 60.0s"
    assert book.started == [("mail", "")]


arrivals_st = st.lists(
    st.tuples(st.floats(0, 0.6), st.lists(st.sampled_from(["a", "b", None]), max_size=6)),
    min_size=1, max_size=40)


@given(st.integers(1, 4), st.sampled_from([1.0, 60.0]), arrivals_st)
def test_never_more_starts_in_any_window_than_the_limit(
        count: int, unit: float, cycles: list[tuple[float, list[str | None]]]) -> None:
    """Cycles at random moments offer random keys' jobs (and keep those left behind);
    whatever happens, no window of the limit's length holds more than ``count`` starts
    of a key, and a job is refused only when its key's window is full."""
    limit = RateLimit(count, unit)
    log: dict[tuple[str, str], list[float]] = defaultdict(list)
    waiting: list[Candidate] = []
    now, next_id = 0.0, 1
    for step, keys in cycles:
        now += step * unit
        for key in keys:
            waiting.append(Candidate(next_id, "t", 0, ("p",), rate_key=key))
            next_id += 1
        reads: list[tuple[str, str]] = []
        book = _book({"t": limit}, now, log, reads)
        planner = Planner.from_snapshot([WorkerSlot(1, "w", ("p",), 1000)], [], rates=book)
        left = []
        for job in waiting:
            decision = planner.offer(job)
            if isinstance(decision, Skip):
                bucket = ("t", job.rate_key or "")
                assert budget(limit, log[bucket] + [now] * book.started.count(bucket),
                              now) <= 0
                left.append(job)
        for bucket in book.started:
            log[bucket].append(now)
        assert len(reads) == len(set(reads))
        waiting = left
    for starts in log.values():
        for first in starts:
            assert sum(1 for at in starts if first <= at < first + unit) <= count


def test_a_job_held_by_a_rate_limit_does_not_hold_its_locks_ahead() -> None:
    """It waits for time, not for other jobs: a younger job wanting its lock goes ahead."""
    book = _book({"mail": RateLimit(1, 60.0)}, 0.0, defaultdict(list), [])
    book.start("mail", None)
    planner = Planner.from_snapshot([WorkerSlot(1, "w", ("default",), 10)], [], rates=book)
    lock = (LockClaim("smtp"),)
    held = planner.offer(Candidate(1, "mail", 0, ("default",), locks=lock))
    assert isinstance(held, Skip) and held.reason is SkipReason.RATE_LIMITED
    assert isinstance(planner.offer(Candidate(2, "other", 0, ("default",), locks=lock)),
                      Placement)
