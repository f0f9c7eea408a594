"""A batch's rows (store/schema/job_rows.py:row_values) are each what job_row builds for
its job: the jobs of one call share the first one's row but for what their args decide,
and a refusal is job_row's own, naming the first job refused."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core.limits import Limits
from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store.schema.job_rows import job_row, row_values

SPECS = {
    "plain": TaskTypeSpec("plain", "python:tests.handlers_for_tests:echo"),
    "locked": TaskTypeSpec("locked", "python:tests.handlers_for_tests:echo",
                           locks=("res:{x}",), simultaneous=False),
    "rated": TaskTypeSpec("rated", "python:tests.handlers_for_tests:echo",
                          rate_limit="5/s", rate_key="tenant:{x}"),
    "shell": TaskTypeSpec("shell", "shell:echo {x}"),
}
LIMITS = Limits(max_args_bytes=40)

# args: x present or not, a value long enough (or not) to pass the size limit,
# or not JSON at all
ARGS = st.one_of(
    st.builds(lambda x: {"x": x}, st.integers(0, 3)),
    st.builds(lambda n: {"x": "v" * n}, st.integers(0, 40)),
    st.just({}),
    st.just({"x": float("nan")}),
    st.just({"x": {"deep": [1, 2]}}),
)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[JobSubmission], TaskTypeSpec]:
    """A batch of one type as one call builds it (every field but the args the same
    objects), with some jobs that differ from the first in a field or in their type."""
    spec = SPECS[draw(st.sampled_from(sorted(SPECS)))]
    trace = draw(st.sampled_from([None, "00-" + "1" * 32 + "-" + "2" * 16 + "-01"]))
    pools = draw(st.sampled_from([None, ("a",), ("b", "c")]))
    locks = draw(st.sampled_from([(), ("extra",)]))
    run_after = draw(st.sampled_from([None, 1.0, 4e9]))  # past; far ahead (delayed)
    priority = draw(st.integers(-3, 3))
    subs = []
    for _ in range(draw(st.integers(1, 12))):
        args = draw(ARGS)
        change = draw(st.sampled_from(["none"] * 6 + ["priority", "pools", "trace", "type",
                                                      "bool", "label", "retries"]))
        sub = JobSubmission(spec.name, args, priority=priority, pools=pools,
                            run_after=run_after, locks=locks, trace_context=trace)
        if change == "priority":
            sub.priority = priority + 1
        elif change == "pools":
            sub.pools = ("other",)
        elif change == "trace":
            sub.trace_context = None if trace else "00-" + "3" * 32 + "-" + "4" * 16 + "-01"
        elif change == "type":
            sub.type = "plain"
        elif change == "bool":
            sub.priority = True  # equal to 1, refused by job_row
        elif change == "label":
            sub.label = "a label"
        elif change == "retries":
            sub.retries = -1
        subs.append(sub)
    return subs, spec


def expected(subs: list[JobSubmission], columns: tuple[str, ...]) -> list[Any]:
    many = len(subs) > 1
    rows: list[Any] = []
    for index, sub in enumerate(subs):
        try:
            row = job_row(sub, SPECS[sub.type], index if many else None, limits=LIMITS)
        except InvalidInput as exc:
            return [*rows, str(exc)]
        rows.append(tuple(row.get(c) for c in columns))
    return rows


def built(subs: list[JobSubmission], first: dict[str, Any],
          columns: tuple[str, ...]) -> list[Any]:
    rows: list[Any] = []
    try:
        for row in row_values(subs, SPECS, first, columns, limits=LIMITS):
            rows.append(row)
    except InvalidInput as exc:
        rows.append(str(exc))
    return rows


@settings(max_examples=400, deadline=None)
@given(batches())
def test_each_row_is_job_rows_and_a_refusal_names_the_first_job_refused(
        batch: tuple[list[JobSubmission], TaskTypeSpec]) -> None:
    subs, _ = batch
    many = len(subs) > 1
    try:
        first = job_row(subs[0], SPECS[subs[0].type], 0 if many else None, limits=LIMITS)
    except InvalidInput:
        return  # the caller's own refusal, before any row
    columns = tuple(first)
    if many and any(s.trace_context is not None for s in subs) \
            and "trace_context" not in columns:
        columns = (*columns, "trace_context")
    assert built(subs, first, columns) == expected(subs, columns)


def test_a_batch_of_one_call_differs_only_where_its_args_decide() -> None:
    spec = SPECS["locked"]
    subs = [JobSubmission("locked", {"x": i}, priority=2, pools=("a",)) for i in range(3)]
    first = job_row(subs[0], spec, 0)
    columns = tuple(first)
    rows = list(row_values(subs, SPECS, first, columns))
    differ = {columns[i] for i in range(len(columns)) if len({r[i] for r in rows}) > 1}
    assert differ == {"args", "locks"}
    assert [r[columns.index("args")] for r in rows] == ['{"x":0}', '{"x":1}', '{"x":2}']


def test_a_refused_job_of_one_call_is_named_by_its_place() -> None:
    subs = [JobSubmission("shell", {"x": 1}) for _ in range(5)]
    subs[3].args = {"y": 1}  # its own dict, as every job of a call has
    first = job_row(subs[0], SPECS["shell"], 0)
    rows = built(subs, first, tuple(first))
    assert len(rows) == 4 and rows[3] == (
        "job 3: shell handler: the job's args have no 'x'")


def test_an_option_equal_to_the_first_ones_but_not_it_is_checked_again() -> None:
    """True == 1, but job_row refuses a priority that is a bool: a job shares the first
    one's checks only when its fields are the first's very objects."""
    subs = [JobSubmission("plain", {"x": 1}, priority=1) for _ in range(3)]
    subs[2].priority = True
    first = job_row(subs[0], SPECS["plain"], 0)
    rows = built(subs, first, tuple(first))
    assert rows[2] == "job 2: priority must be a whole number"
