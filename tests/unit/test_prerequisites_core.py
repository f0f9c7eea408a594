"""Update on launch: prerequisite args from templates, and reuse or spawn (pure core)."""

from __future__ import annotations

import pytest

from taskyard.core.prerequisites import (
    IN_FLIGHT,
    PrerequisiteError,
    PriorRun,
    Reuse,
    Spawn,
    decide,
    render_args,
)

WHERE = "task type deploy: prerequisite sync"


def test_a_whole_placeholder_keeps_the_arg_and_its_type() -> None:
    args = {"inventory": 5, "tags": ["a", "b"], "opts": {"deep": True}, "name": "web"}
    template = {"inventory_id": "{inventory}", "tags": "{tags}", "opts": "{opts}",
                "name": "{name}"}
    assert render_args(template, args, where=WHERE) == {
        "inventory_id": 5, "tags": ["a", "b"], "opts": {"deep": True}, "name": "web"}


def test_placeholders_inside_text_are_filled_as_text() -> None:
    rendered = render_args({"path": "/srv/{name}/{inventory}.yml", "same": "{name}{name}"},
                           {"name": "web", "inventory": 5}, where=WHERE)
    assert rendered == {"path": "/srv/web/5.yml", "same": "webweb"}


def test_nested_mappings_and_lists_are_filled_and_other_values_kept() -> None:
    template = {"scope": {"ids": ["{a}", "x-{a}", 3], "flag": None, "limit": 2.5},
                "plain": "no placeholder", "braces": "{not a name}", "on": False}
    assert render_args(template, {"a": 1}, where=WHERE) == {
        "scope": {"ids": [1, "x-1", 3], "flag": None, "limit": 2.5},
        "plain": "no placeholder", "braces": "{not a name}", "on": False}


@pytest.mark.parametrize("template", [{"id": "{missing}"}, {"p": "/srv/{missing}"},
                                      {"deep": [{"x": "{missing}"}]}])
def test_a_placeholder_the_job_lacks_is_named_with_where(template: dict[str, object]) -> None:
    with pytest.raises(PrerequisiteError) as caught:
        render_args(template, {"present": 1}, where=WHERE)
    assert str(caught.value) == f"{WHERE}: the job's args have no 'missing'"


def test_the_template_is_not_changed() -> None:
    template = {"ids": ["{a}"], "m": {"k": "{a}"}}
    render_args(template, {"a": 1}, where=WHERE)
    assert template == {"ids": ["{a}"], "m": {"k": "{a}"}}


NOW = 10_000.0


@pytest.mark.parametrize("state", sorted(IN_FLIGHT))
def test_an_in_flight_run_is_reused_and_waited_for_even_without_a_cache(state: str) -> None:
    assert decide([PriorRun(4, state, None)], cache=0, now=NOW) == Reuse(4, wait=True)


def test_an_in_flight_run_wins_over_an_earlier_fresh_success() -> None:
    prior = [PriorRun(1, "succeeded", NOW - 1), PriorRun(2, "running", None)]
    assert decide(prior, cache=60, now=NOW) == Reuse(2, wait=True)


@pytest.mark.parametrize(("finished_ago", "cache", "expected"), [
    (0, 0, Reuse(3, wait=False)),
    (60, 60, Reuse(3, wait=False)),   # the window's edge still counts
    (60.5, 60, Spawn()),
    (3600, 60, Spawn()),
])
def test_a_success_is_reused_within_the_cache_window(
        finished_ago: float, cache: float, expected: Reuse | Spawn) -> None:
    assert decide([PriorRun(3, "succeeded", NOW - finished_ago)], cache=cache, now=NOW) == \
        expected


@pytest.mark.parametrize("run", [
    PriorRun(5, "failed", NOW - 1), PriorRun(5, "error", NOW - 1),
    PriorRun(5, "canceled", NOW - 1), PriorRun(5, "succeeded", None),
])
def test_a_run_that_did_not_succeed_or_has_no_end_is_never_reused(run: PriorRun) -> None:
    assert decide([run], cache=3600, now=NOW) == Spawn()


def test_nothing_to_reuse_spawns() -> None:
    assert decide([], cache=3600, now=NOW) == Spawn()
