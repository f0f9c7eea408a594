"""Scenario files: what they accept, and one clear line naming the field otherwise."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from taskyard.sim import ScenarioError, load_scenario, parse_scenario
from taskyard.sim.distributions import parse_args, parse_duration_spec, parse_value

TYPES = {"t": {"duration": "1s"}}


def bad(doc: object, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("doc", "message"), [
    ([], "scenario: must be a mapping"),
    ({"wrkers": {}}, "scenario: unknown field 'wrkers' (expected one of arrivals, name, "
                     "sample, scheduler, seed, start, stop, task_types, until, waits, workers)"),
    ({"workers": {"east": {"capacity": -1}}}, "workers.east.capacity: must be an integer >= 0"),
    ({"workers": {"east": {"count": 2}}}, "workers.east.capacity: required (an integer >= 0)"),
    ({"workers": {"east": {"capacity": 1, "crash": {"restart": 1}}}},
     "workers.east.crash: give every (mean time between crashes) or at (instants)"),
    ({"workers": {"east": {"capacity": 1, "lease": "soon"}}},
     "workers.east.lease: 'soon' is not a duration (use 90, 90s, 5m, 2h or 1d)"),
    ({"task_types": {"t": {}}}, "task_types.t.duration: required (how long an attempt runs)"),
    ({"task_types": {"t": {"duration": "1s", "cost": 1.5}}},
     "task_types.t.cost: must be an integer >= 0"),
    ({"task_types": {"t": {"duration": "1s", "fail": 2}}},
     "task_types.t.fail: must be a number in [0, 1]"),
    ({"task_types": {"t": {"duration": "1s", "locks": ["p:{x"]}}},
     "task_types.t.locks[0]: lock 'p:{x': expected '}' before end of string"),
    ({"task_types": {"t": {"duration": "1s", "rate_limit": "5/d"}}},
     "task_types.t.rate_limit: '5/d' is not a rate limit (use N/s, N/m or N/h)"),
    ({"task_types": {"t": {"duration": "1s", "rate_limit": "0/s"}}},
     "task_types.t.rate_limit: '0/s' must allow at least 1 start"),
    ({"task_types": {"t": {"duration": "1s", "rate_key": "k:{k}"}}},
     "task_types.t.rate_key: needs a rate_limit"),
    ({"task_types": {"t": {"duration": "1s", "rate_limit": "5/s", "rate_key": "k:{k"}}},
     "task_types.t.rate_key 'k:{k': expected '}' before end of string"),
    ({"task_types": {"t": {"duration": "1s", "rate_limit": "5/s", "rate_key": "k:{k}"}},
      "arrivals": [{"type": "t", "at": 0, "args": {"j": 1}}]},
     "arrivals[0].args: task type 't' takes its rate key from arg 'k', which these jobs "
     "lack"),
    ({"task_types": {"t": {"duration": "1s", "locks": ["repo:{repo}"]}},
      "arrivals": [{"type": "t", "at": 0, "args": {"j": 1}}]},
     "arrivals[0].args: task type 't' takes its lock 'repo:{repo}' from arg 'repo', which "
     "these jobs lack"),
    ({"task_types": {"t": {"duration": {"weibull": 3}}}},
     "task_types.t.duration: must be a duration (30s), {exponential: MEAN}, "
     "{uniform: [LOW, HIGH]}, {lognormal: {median: M, sigma: S}} or {arg: NAME}"),
    ({"task_types": {"t": {"duration": "1s", "prerequisites": [{"type": "u"}]}}},
     "task_types.t.prerequisites[0].type: unknown task type 'u'"),
    ({"task_types": TYPES, "arrivals": [{"type": "t"}]},
     "arrivals[0]: give exactly one of poisson, at, every, cron, adaptive"),
    ({"task_types": TYPES, "arrivals": [{"type": "x", "at": 0}]},
     "arrivals[0].type: unknown task type 'x'"),
    ({"task_types": TYPES, "arrivals": [{"type": "t", "poisson": "fast"}]},
     "arrivals[0].poisson: 'fast' is not a rate (use 2/s, 30/m, 100/h, 5/d or a number "
     "per second)"),
    ({"task_types": TYPES, "arrivals": [{"type": "t", "poisson": "2/s"}]},
     "arrivals[0]: arrives for ever: give its end or count, or the scenario's until"),
    ({"task_types": TYPES, "until": "1h", "arrivals": [{"type": "t", "cron": "0 25 * * *"}]},
     "arrivals[0].cron: cron '0 25 * * *': hour field: 25 is out of range 0-23"),
    ({"task_types": TYPES, "until": "1h",
      "arrivals": [{"type": "t", "cron": "0 * * * *", "timezone": "Mars/Base"}]},
     "arrivals[0].timezone: unknown time zone 'Mars/Base' (use an IANA name like "
     "Europe/Paris or UTC)"),
    ({"task_types": TYPES, "until": "1h", "arrivals": [{"type": "t", "adaptive": True}]},
     "arrivals[0].adaptive: task type 't' has no interval (interval: DEFAULT,MIN,MAX)"),
    ({"task_types": TYPES, "arrivals": [{"type": "t", "every": "1m", "burst": 2, "end": 60}]},
     "arrivals[0].burst: goes with at (jobs at given instants)"),
    ({"task_types": TYPES, "arrivals": [{"type": "t", "at": 0, "priority": {"one_of": ["x"]}}]},
     "arrivals[0].priority.one_of[0]: must be an integer"),
    ({"task_types": {"t": {"duration": {"arg": "seconds"}}}, "arrivals": [{"type": "t", "at": 0}]},
     "arrivals[0].args: task type 't' takes its duration from arg 'seconds', which these "
     "jobs lack"),
])
def test_a_bad_scenario_is_refused_naming_the_field(doc, message):
    bad(doc, message)


def test_a_graph_arrival_is_checked_against_the_task_types(tmp_path: Path):
    (tmp_path / "g.yaml").write_text("tasks:\n  a: {type: nope}\n")
    with pytest.raises(ScenarioError, match=r"^arrivals\[0\]\.graph: task 'a': unknown task "
                                            r"type 'nope'$"):
        parse_scenario({"task_types": TYPES, "arrivals": [{"graph": "g.yaml", "at": 0}]},
                       base=tmp_path)
    with pytest.raises(ScenarioError, match=r"^arrivals\[0\]\.priority: a graph's tasks carry "
                                            r"their own priority$"):
        parse_scenario({"task_types": TYPES,
                        "arrivals": [{"graph": "g.yaml", "at": 0, "priority": 1}]},
                       base=tmp_path)
    with pytest.raises(ScenarioError, match=r"^arrivals\[0\]\.graph: cannot read "):
        parse_scenario({"task_types": TYPES, "arrivals": [{"graph": "missing.yaml", "at": 0}]},
                       base=tmp_path)


def test_a_file_that_is_not_yaml_is_refused(tmp_path: Path):
    path = tmp_path / "s.yaml"
    path.write_text("workers: [\n")
    with pytest.raises(ScenarioError, match=r"s\.yaml: not YAML"):
        load_scenario(path)


def test_a_full_scenario_reads_taskyards_own_task_type_fields():
    scenario = parse_scenario({
        "name": "n", "seed": 7, "start": "2026-03-01T00:00:00Z", "until": "1h", "stop": "2h",
        "scheduler": {"aging": "5m", "scan_limit": 100, "timeout_grace": 3},
        "workers": {"east": {"count": 4, "capacity": 2, "pools": ["east", "default"],
                             "prefetch": 0, "lease": 0,
                             "crash": {"every": "6h", "at": ["1m", "2m"], "restart": "30s"}}},
        "task_types": {"build": {
            "handler": "python:m:f", "description": "ignored by the simulator",
            "pools": "east", "cost": 2, "timeout": "30m", "retries": 2, "retry_delay": "10s",
            "retry_backoff": 2, "retry_max_delay": "5m", "interval": "1d,12h,64d",
            "backoff_factor": 2, "max_queue_length": 10, "locks": ["repo:{repo}"],
            "simultaneous": False, "max_worker_losses": 1,
            "duration": {"lognormal": {"median": "2m", "sigma": 0.5}}, "fail": 0.1,
            "eventful": 0.3}},
        "arrivals": [{"type": "build", "poisson": "30/m", "args": {"repo": {"one_of": ["a"]}},
                      "priority": {"range": [0, 3]}, "pools": ["default"], "count": 10}],
    })
    build = scenario.types["build"]
    assert (build.pools, build.cost, build.timeout, build.retry.retries, build.retry.delay,
            build.retry.max_delay, build.max_queue_length, build.simultaneous) == (
        ("east",), 2, 1800.0, 2, 10.0, 300.0, 10, False)
    assert scenario.workers[0].crash_at == (60.0, 120.0)
    assert scenario.arrivals[0].rate == 0.5
    assert scenario.start_epoch == 1772323200.0
    assert scenario.with_workers({"east": (9, 3)}).workers[0].count == 9
    with pytest.raises(ScenarioError, match="--workers west: no worker group 'west'"):
        scenario.with_workers({"west": (1, None)})


def test_distributions_and_values_draw_within_their_bounds():
    rng = random.Random(3)
    uniform = parse_duration_spec({"uniform": ["1s", "2s"]}, "d")
    assert all(1 <= uniform.sample(rng, {}) <= 2 for _ in range(100))
    exponential = parse_duration_spec({"exponential": "10s"}, "d")
    draws = [exponential.sample(rng, {}) for _ in range(4000)]
    assert 9 < sum(draws) / len(draws) < 11
    assert parse_duration_spec({"arg": "s"}, "d").sample(rng, {"s": "2m"}) == 120
    assert {parse_value({"range": [1, 3]}, "v").sample(rng) for _ in range(100)} == {1, 2, 3}
    args = parse_args({"a": 1, "b": {"one_of": ["x", "y"]}}, "args")
    assert {args.sample(rng)["b"] for _ in range(50)} == {"x", "y"}
    fixed = parse_args({"a": 1}, "args")
    assert fixed.sample(rng) is fixed.sample(rng)  # one shared dict
