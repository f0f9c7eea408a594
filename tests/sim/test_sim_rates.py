"""Rate limits in the simulator: no window of a key ever holds more starts than its
limit (random scenarios, with crashes, retries, locks and aging), a refused key gets
its cycle when it reopens, and the report says what each limit held back."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from sim_invariants import check
from sim_runs import events, jobs, run

from taskyard.core.rate_limits import parse_rate_limit
from taskyard.sim import SimResult


def starts_per_key(result: SimResult) -> dict[tuple[str, str], list[float]]:
    """Per (type, rate key) of the limited types, the dispatch times (each is a start
    of the rate limit, retries included, as RateBook.start counts them)."""
    found = jobs(result)
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for t, job_id, _, _ in events(result, "dispatch"):
        job = found[job_id]
        if job.type.rate_limit is not None:
            out[job.type.name, job.cand.rate_key or ""].append(t)
    return out


def most_in_a_window(times: list[float], per: float) -> int:
    """The most starts in one window of ``per`` seconds: for each start, those in the
    window that ends with it (the rule of core.rate_limits.budget)."""
    times = sorted(times)
    return max((sum(1 for a in times if b - per < a <= b) for b in times), default=0)


limited_st = st.fixed_dictionaries({
    "duration": st.one_of(st.integers(0, 5), st.builds(lambda m: {"exponential": m},
                                                        st.integers(1, 5))),
    "rate_limit": st.sampled_from(["1/s", "2/s", "3/s", "5/m", "1/m"]),
    "fail": st.sampled_from([0.0, 0.3]),
    "retries": st.integers(0, 2),
    "pools": st.sampled_from([["a"], ["b"], ["a", "b"]]),
}, optional={"rate_key": st.sampled_from(["k:{x}", "{x}-{y}"]),
             "locks": st.sampled_from([["x:{x}"], ["x:{x}:shared"]]),
             "max_queue_length": st.integers(1, 4)})

arrival_st = st.one_of(
    st.fixed_dictionaries({"poisson": st.sampled_from(["1/s", "5/s", "20/m"]),
                           "count": st.integers(1, 30)}),
    st.fixed_dictionaries({"at": st.lists(st.integers(0, 60), min_size=1, max_size=3),
                           "burst": st.integers(1, 12)}),
)


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    types = {f"L{n}": spec for n, spec in enumerate(draw(st.lists(limited_st, min_size=1,
                                                                   max_size=3)))}
    types["free"] = {"duration": draw(st.integers(0, 5)), "pools": ["a", "b"]}
    arrivals = [{"type": draw(st.sampled_from(sorted(types))),
                 "args": {"x": {"one_of": [1, 2, 3]}, "y": {"one_of": ["p", "q"]}},
                 "priority": {"one_of": [0, 1, 5]}, **a}
                for a in draw(st.lists(arrival_st, min_size=1, max_size=4))]
    workers = {"ab": {"count": draw(st.integers(1, 3)), "capacity": draw(st.integers(1, 4)),
                      "pools": ["a", "b"], "prefetch": draw(st.sampled_from([0, 512]))}}
    if draw(st.booleans()):
        workers["crashy"] = {"capacity": 2, "pools": ["a", "b"], "lease": 5,
                             "crash": {"every": draw(st.integers(10, 120)), "restart": 3}}
    return {"workers": {"ab": {**workers["ab"]}, **workers}, "task_types": types,
            "arrivals": arrivals, "seed": draw(st.integers(0, 2**16)),
            "scheduler": {"aging": draw(st.sampled_from([0, 30]))}}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_no_window_holds_more_starts_of_a_key_than_its_limit(doc: dict) -> None:
    note(repr(doc))
    result = run(doc)
    check(result)  # and every job still ends: a refused key gets its cycle back
    for (type_name, key), times in starts_per_key(result).items():
        limit = parse_rate_limit(doc["task_types"][type_name]["rate_limit"])
        assert most_in_a_window(times, limit.per) <= limit.count, (type_name, key, times)


def test_each_key_has_the_whole_limit_and_its_jobs_start_when_the_window_moves() -> None:
    doc = {"workers": {"w": {"capacity": 100}},
           "task_types": {"mail": {"duration": "10m", "rate_limit": "3/s",
                                   "rate_key": "tenant:{tenant}"},
                          "sync": {"duration": 1, "rate_limit": "2/m"}},
           "arrivals": [{"type": "mail", "at": 0, "burst": 7, "args": {"tenant": "a"}},
                        {"type": "mail", "at": 0, "burst": 4, "args": {"tenant": "b"}},
                        {"type": "sync", "at": 0, "burst": 3}]}
    result = run(doc)
    starts = {key: sorted(times) for key, times in starts_per_key(result).items()}
    assert starts == {("mail", "tenant:a"): [0.0] * 3 + [1.0] * 3 + [2.0],
                      ("mail", "tenant:b"): [0.0] * 3 + [1.0],
                      ("sync", ""): [0.0, 0.0, 60.0]}
    rows = {(r["type"], r["key"]): r for r in result.report["rate_limits"]}
    assert rows["mail", "tenant:a"] | {"seconds": None, "mean": None} == {
        "type": "mail", "key": "tenant:a", "limit": "3/s", "jobs": 4, "cycles": 2,
        "skips": 0, "seconds": None, "mean": None}
    # Four jobs of tenant a held back at 0: three for 1 s, one for 2 s.
    assert rows["mail", "tenant:a"]["seconds"] == 5.0
    assert rows["mail", "tenant:b"]["jobs"] == 1 and rows["mail", "tenant:b"]["cycles"] == 1
    assert rows["sync", ""]["jobs"] == 1 and rows["sync", ""]["seconds"] == 60.0
    assert [w["max"] for w in result.report["waits"] if w["type"] == "sync"] == [60.0]


def test_the_planner_refuses_a_job_of_a_key_found_spent_in_a_later_stream() -> None:
    # Two pools lists: the job of pools [b] is read before the key runs out (its stream
    # head is peeked first), then refused by the Planner: a skip, as in the real cycle.
    doc = {"workers": {"w": {"capacity": 10, "pools": ["a", "b"]}},
           "task_types": {"mail": {"duration": 1, "rate_limit": "1/s", "pools": ["a"]}},
           "arrivals": [{"type": "mail", "at": 0, "burst": 2},
                        {"type": "mail", "at": 0, "burst": 1, "pools": ["b"]}]}
    result = run(doc)
    skips = [e for e in result.trace or [] if e[1] == "skip:rate_limited"]
    assert [(t, job) for t, _, job, _, _ in skips] == [(0.0, 3), (1.0, 3)]
    (row,) = result.report["rate_limits"]
    assert row["skips"] == len(skips) and row["jobs"] == 2
    assert sorted(starts_per_key(result)["mail", ""]) == [0.0, 1.0, 2.0]


def test_the_report_shows_a_rate_limits_table() -> None:
    from taskyard.sim.report import tables

    doc = {"workers": {"w": {"capacity": 4}},
           "task_types": {"mail": {"duration": 1, "rate_limit": "2/s"}},
           "arrivals": [{"type": "mail", "at": 0, "burst": 5}]}
    table = {t.title: t for t in tables(run(doc).report)}["rate limits"]
    assert table.rows == [("mail", "-", "2/s", 3, 2, 0, "4.0s", "1.3s")]
