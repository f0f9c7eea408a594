"""Bad input through the store's own seam (the Python API's path): refused with
InvalidInput naming the field, before any SQL, alike on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from taskyard.model.errors import InvalidInput
from taskyard.model.records import JobSubmission, TaskTypeSpec
from taskyard.store import Store


@pytest.mark.parametrize(("sub", "message"), [
    (JobSubmission("t", priority=2**63), "priority must be a whole number from -1000000000"),
    (JobSubmission("t", priority=True), "priority must be a whole number"),
    (JobSubmission("t", retries=10**30), "retries must be a whole number from 0 to 1000000"),
    (JobSubmission("t\x00"), "task type name 't\\x00' holds a NUL character"),
    (JobSubmission("t", pools=("gp\x00u",)), "pool name 'gp\\x00u' holds a NUL character"),
    (JobSubmission("t", args={"k": "\x00"}), "args holds a NUL character"),
    (JobSubmission("t", args={"\udc80": 1}), "lone surrogates"),
    (JobSubmission("sh"), "shell handler: the job's args have no 'name'"),
])
def test_a_bad_submission_is_refused_and_writes_nothing(store: Store, sub: JobSubmission,
                                                        message: str) -> None:
    store.task_types.put(TaskTypeSpec("t", "python:mod:func"))
    store.task_types.put(TaskTypeSpec("sh", "shell:echo {name}"))
    for batch in ([sub], [JobSubmission("t"), sub]):  # one alone, and within a batch
        with pytest.raises(InvalidInput) as caught:
            store.jobs.submit(batch)
        assert message in str(caught.value)
    assert store.jobs.list() == []


@pytest.mark.parametrize(("spec", "message"), [
    (TaskTypeSpec("a\x00b", "shell:true"), "task type name 'a\\x00b' holds a NUL character"),
    (TaskTypeSpec("t", "shell:echo \x00"), "handler holds a NUL character"),
    (TaskTypeSpec("t", "shell:true", description="\ud800"), "description holds"),
    (TaskTypeSpec("t", "shell:true", pools=("a\nb",)), "pool name 'a\\nb' holds"),
    (TaskTypeSpec("t", "shell:true", cost=2**31), "cost must be a whole number from 0"),
    (TaskTypeSpec("t", "shell:true", max_queue_length=2**40), "max_queue_length must be"),
    (TaskTypeSpec("t", "shell:true", retry_backoff=float("inf")), "retry_backoff must be"),
    (TaskTypeSpec("t", "shell:true", locks=("x\x00",)), "lock 'x\\x00' holds"),
])
def test_a_bad_task_type_is_refused(store: Store, spec: TaskTypeSpec, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        store.task_types.put(spec)
    assert message in str(caught.value)
    assert store.task_types.list() == []


def test_a_worker_needs_names_without_control_characters(store: Store) -> None:
    with pytest.raises(InvalidInput, match="worker: name 'w\\\\x00' holds a NUL character"):
        store.workers.register("w\x00", ["default"], 1, lease_seconds=10)
    with pytest.raises(InvalidInput, match="worker: capacity must be a whole number"):
        store.workers.register("w", ["default"], 2**40, lease_seconds=10)
    assert store.workers.list() == []


@pytest.mark.parametrize(("options", "message"), [
    ({"every": 5, "priority": 10**30},
     "priority must be a whole number from -1000000000 to 1000000000"),
    ({"every": 5, "type": "sy\x00nc"}, "type 'sy\\x00nc' holds a NUL character"),
    ({"cron": "0 3 * * *", "timezone": "UTC\x00"}, "timezone 'UTC\\x00' holds"),
    ({"every": 5, "args": {"s": "a\x00b"}}, "args holds a NUL character"),
    ({"every": 5, "args": {"s": "\ud800"}}, "lone surrogates"),
    ({"every": 5}, "shell handler: the job's args have no 'name'"),
])
def test_a_bad_schedule_is_refused(store: Store, options: dict[str, object],
                                   message: str) -> None:
    store.task_types.put(TaskTypeSpec("sh", "shell:echo {name}"))
    options = dict(options)  # the same dict serves each store's run
    type_name = str(options.pop("type", "sh"))
    with pytest.raises(InvalidInput) as caught:
        store.schedules.add("bad", type_name, **options)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert store.schedules.get("bad") is None
