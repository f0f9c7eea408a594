"""States, durations, locks, retries, handler specs, limits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.durations import DurationError, parse_duration, parse_interval, parse_when
from taskyard.core.handlers import HandlerSpecError, parse_handler, render_shell
from taskyard.core.limits import LimitError, encode_args, nesting_depth
from taskyard.core.locks import LockClaim, LockTemplateError, render_claims
from taskyard.core.retry import RetryPolicy, decide_retry
from taskyard.core.states import JOB_TRANSITIONS, TERMINAL, JobState, can_transition


def test_every_state_has_a_transition_row_and_success_is_final():
    assert set(JOB_TRANSITIONS) == set(JobState)
    assert not JOB_TRANSITIONS[JobState.SUCCEEDED]
    assert can_transition(JobState.PENDING, JobState.DISPATCHED)
    assert not can_transition(JobState.PENDING, JobState.SUCCEEDED)
    # Only the worker's claim starts a job; nothing jumps from waiting to running.
    assert not can_transition(JobState.WAITING, JobState.RUNNING)
    # A job that ended only comes back through `job retry` (pending, or waiting for
    # parents that run again): never straight to a worker.
    for state in TERMINAL:
        assert JOB_TRANSITIONS[state] <= {JobState.PENDING, JobState.WAITING}


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("2h", 7200), ("1d", 86400)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-1", "5x", "1.2.3", "m"])
def test_bad_durations_are_named(text):
    with pytest.raises(DurationError, match="timeout"):
        parse_duration(text, field="timeout")


def test_interval_forms():
    iv = parse_interval("1d,12h,64d")
    assert (iv.default, iv.minimum, iv.maximum) == (86400, 43200, 64 * 86400)
    assert parse_interval({"default": "1h", "min": "1m", "max": "1d"}).minimum == 60
    with pytest.raises(DurationError):
        parse_interval("1h,2h,3h")


def test_run_after_takes_duration_or_iso():
    assert parse_when("2s", now=100.0) == 102.0
    assert parse_when("1970-01-01T00:01:00Z", now=0) == 60.0
    with pytest.raises(DurationError):
        parse_when("tomorrow-ish", now=0)


def test_lock_templates_render_and_name_missing_args():
    claims = render_claims("playbook", ["project:{project_id}:shared"], {"project_id": 7})
    assert claims == (LockClaim("project:7", exclusive=False),)
    with pytest.raises(LockTemplateError, match="project_id"):
        render_claims("t", ["project:{project_id}"], {})
    with pytest.raises(LockTemplateError, match="the key is empty"):
        render_claims("t", [":shared"], {})  # a submit's own locks are checked here
    a = render_claims("jt", [], {"x": 1}, simultaneous=False)
    assert a == render_claims("jt", [], {"x": 1}, simultaneous=False)
    assert a != render_claims("jt", [], {"x": 2}, simultaneous=False)


@given(st.integers(0, 5), st.floats(0, 100), st.floats(1, 4), st.integers(1, 8), st.floats(0, 1))
def test_retry_delay_never_below_half_and_attempts_bounded(retries, delay, backoff, attempt, j):
    decision = decide_retry(RetryPolicy(retries, delay, backoff, 1e9), attempt, j)
    assert decision.retry == (attempt <= retries)
    if decision.retry:
        full = delay * backoff ** (attempt - 1)
        assert full / 2 - 1e-9 <= decision.delay <= full + 1e-9


def test_handler_specs():
    assert parse_handler("python:pkg.mod:run").module == "pkg.mod"
    assert parse_handler("shell:echo hi").target == "echo hi"
    for bad in ["java:x", "python:mod", "python:1mod:f", "shell:  "]:
        with pytest.raises(HandlerSpecError):
            parse_handler(bad)
    assert render_shell("echo {a} {b}", {"a": "it's here", "b": 3}) == (
        'echo "${TASKYARD_ARG_a}" "${TASKYARD_ARG_b}"')
    with pytest.raises(HandlerSpecError, match="'c'"):
        render_shell("echo {c}", {})


def test_limits():
    assert nesting_depth({"a": [{"b": 1}]}) == 3
    with pytest.raises(LimitError, match="nest"):
        encode_args(_deep(70), where="job 0")
    with pytest.raises(LimitError, match="bytes"):
        encode_args({"x": "y" * 300_000}, where="job 0")
    with pytest.raises(LimitError, match="JSON object"):
        encode_args([1], where="job 0")


def test_args_that_contain_themselves_or_repeat_their_parts_are_refused_in_bounded_time():
    looped: dict[str, object] = {"x": []}
    looped["x"].append(looped)  # type: ignore[attr-defined]
    with pytest.raises(LimitError, match="nest more than 64 levels"):
        encode_args(looped, where="job 0")
    # Parts shared by reference, as YAML aliases make them: 10^9 values in 9 lists of 10.
    part: list[object] = [1] * 10
    for _ in range(8):
        part = [part] * 10
    with pytest.raises(LimitError, match="job 0: args hold more than 262144 values"):
        encode_args({"a": part}, where="job 0")


def _deep(n: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(n):
        value = {"a": value}
    return value


def test_lock_groups_share_within_and_exclude_across() -> None:
    from taskyard.core.locks import decode_claim

    job_a, job_b = decode_claim("inv:1:shared"), decode_claim("inv:1:shared")
    upd_a, upd_b = decode_claim("inv:1:group=updates"), decode_claim("inv:1:group=updates")
    assert not job_a.conflicts(job_b) and not upd_a.conflicts(upd_b)
    assert job_a.conflicts(upd_a) and upd_a.conflicts(job_a)
    assert decode_claim("inv:1").conflicts(job_a)
    assert upd_a.encode() == "inv:1:group=updates" and decode_claim(upd_a.encode()) == upd_a
    assert not decode_claim("inv:2").conflicts(decode_claim("inv:1"))


@pytest.mark.parametrize(
    ("pattern", "key", "expected"),
    [
        ("taskyard.#", "taskyard.1.nightly._", True),
        ("taskyard.*.nightly.*", "taskyard.1.nightly._", True),
        ("taskyard.*.nightly", "taskyard.1.nightly._", False),
        ("#", "a.b.c", True),
        ("#.c", "a.b.c", True),
        ("a.#.c", "a.c", True),
        ("a.#.c", "a.x.y.c", True),
        ("a.*.c", "a.c", False),
        ("*.*", "a", False),
        ("a.#", "a", True),
        ("#.#", "a.b", True),
        ("a.#.b.#.c", "a.x.b.c", True),
        ("a.#.b.#.c", "a.x.c", False),
    ],
)
def test_topic_patterns(pattern: str, key: str, expected: bool) -> None:
    from taskyard.core.routing import topic_matches

    assert topic_matches(pattern, key) is expected


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5),
       st.lists(st.sampled_from(["a", "b", "*", "#"]), min_size=1, max_size=5))
def test_topic_matching_agrees_with_a_regex(words: list[str], parts: list[str]) -> None:
    import re

    from taskyard.core.routing import topic_matches

    # Reference: translate to a regex over ".word" segments.
    regex = "".join({"*": r"\.[^.]+", "#": r"(\.[^.]+)*"}.get(p, r"\." + p) for p in parts)
    expected = re.fullmatch(regex, "." + ".".join(words)) is not None
    assert topic_matches(".".join(parts), ".".join(words)) is expected


@pytest.mark.parametrize(("template", "why"), [
    ("", "the key is empty"),
    (":shared", "the key is empty"),
    ("project:{project_id", "expected '}'"),
    ("project:{0}", "must name one of the job's args"),
    ("project:{a.b}", "must name one of the job's args"),
])
def test_lock_templates_are_checked_when_declared(template: str, why: str) -> None:
    from taskyard.core.locks import check_template

    with pytest.raises(LockTemplateError, match=why):
        check_template(template)
    assert check_template("project:{project_id}:shared") == ["project_id"]


def test_limits_come_from_the_environment() -> None:
    from taskyard.core.limits import DEFAULT_LIMITS, limits_from_env

    assert limits_from_env({}) == DEFAULT_LIMITS
    assert limits_from_env({"TASKYARD_MAX_GRAPH_TASKS": "10", "TASKYARD_MAX_NESTING": " 3 "}
                           ).max_graph_tasks == 10
    for bad in ("0", "-1", "many"):
        with pytest.raises(LimitError, match=f"TASKYARD_MAX_ARGS_BYTES={bad!r}"):
            limits_from_env({"TASKYARD_MAX_ARGS_BYTES": bad})


@pytest.mark.parametrize(("text", "kind", "module", "function"), [
    ("python:pkg.mod:run", "python", "pkg.mod", "run"),
    ("python:jobs:resize_2", "python", "jobs", "resize_2"),
])
def test_a_python_handler_names_its_module_and_function(
        text: str, kind: str, module: str, function: str) -> None:
    spec = parse_handler(text)
    assert (spec.kind, spec.module, spec.function) == (kind, module, function)
    assert str(spec) == text  # the form stored and shown reads back the same
    assert parse_handler(str(spec)) == spec


def test_a_shell_handler_keeps_its_command_whole() -> None:
    spec = parse_handler("shell:curl -s http://host:8080/{path}")
    assert spec == parse_handler("shell:curl -s http://host:8080/{path}")
    assert (spec.kind, spec.target) == ("shell", "curl -s http://host:8080/{path}")
    assert str(spec) == "shell:curl -s http://host:8080/{path}"


def test_a_celery_handler_names_the_celery_task() -> None:
    spec = parse_handler("celery:swh.loader.git.tasks.UpdateGitRepository")
    assert (spec.kind, spec.target) == ("celery", "swh.loader.git.tasks.UpdateGitRepository")
    assert parse_handler(str(spec)) == spec
    for bad in ["celery:", "celery:two words"]:
        with pytest.raises(HandlerSpecError, match="celery:TASK_NAME"):
            parse_handler(bad)


@pytest.mark.parametrize("value", [{"x": {1, 2}}, {"x": float("nan")}, {"x": [float("inf")]},
                                   {"x": object()}])
def test_args_that_are_not_json_are_refused_naming_the_field(value: dict[str, object]) -> None:
    with pytest.raises(LimitError, match=r"^job 3: args are not JSON: "):
        encode_args(value, where="job 3")


def test_args_encode_compact_and_sorted() -> None:
    assert encode_args({"b": [1, {"d": None, "c": "é"}], "a": 1.5}, where="job 3") == \
        '{"a":1.5,"b":[1,{"c":"\\u00e9","d":null}]}'


@pytest.mark.parametrize(("text", "claim"), [
    ("inv:1", LockClaim("inv:1")),
    ("inv:1:exclusive", LockClaim("inv:1")),
    ("inv:1:shared", LockClaim("inv:1", exclusive=False)),
    ("inv:1:group=updates", LockClaim("inv:1", exclusive=False, group="updates")),
])
def test_lock_modes_decode_and_encode_back(text: str, claim: LockClaim) -> None:
    from taskyard.core.locks import decode_claim

    assert decode_claim(text) == claim
    assert decode_claim(claim.encode()) == claim


def test_routing_keys_follow_taskclusters_layout() -> None:
    from taskyard.core.routing import job_key, routing_key, topic_matches

    assert routing_key(7, "nightly", "") == "taskyard.7.nightly._"
    assert routing_key(None, "", "") == "taskyard._._._"
    # A job's stored routing is "<graph routing>.<job routing>".
    assert job_key(7, "nightly.build") == "taskyard.7.nightly.build"
    assert job_key(None, "") == "taskyard._._._"
    assert topic_matches("taskyard.7.#", job_key(7, "nightly.build"))
