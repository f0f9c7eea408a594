"""The Python API end to end, on both stores: task functions that submit themselves,
job handles that wait on a push, graphs built in Python, unique keys and rate limits
through ``Yard``, against real scheduler and worker daemons."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import handlers_api
from conftest import Cluster
from taskyard import Graph, InvalidInput, JobFailed, JobHandle, Yard
from taskyard.api import handles
from taskyard.model.errors import Conflict


@pytest.fixture
def api(cluster: Cluster) -> Cluster:
    yard = cluster.yard
    for func in (handlers_api.add, handlers_api.greet, handlers_api.fail, handlers_api.total):
        yard.task_type()(func)
    return cluster


def test_a_task_function_submits_itself_and_its_handle_waits_for_the_result(
        api: Cluster) -> None:
    api.add_scheduler()
    api.add_worker("w1")
    job = handlers_api.add.submit(2, 3)  # type: ignore[attr-defined]
    assert isinstance(job, JobHandle) and job.result(timeout=60) == 5
    assert job.state() == "succeeded" and job.record().args == {"a": 2, "b": 3}
    assert handlers_api.add(2, 3) == 5  # still the plain function
    greeting = handlers_api.greet.submit("ada", punctuation="?", lang="en")  # type: ignore[attr-defined]
    assert greeting.record().args == {"name": "ada", "punctuation": "?", "lang": "en"}
    assert greeting.result(timeout=60) == "hello ada? lang=en"
    many = handlers_api.add.submit_many([(1, 2), {"a": 10, "b": 20}])  # type: ignore[attr-defined]
    assert [h.result(timeout=60) for h in many] == [3, 30]
    assert api.yard.handle(job.id) == job


def test_a_failed_or_canceled_job_raises_job_failed_and_a_timeout_is_a_timeout_error(
        api: Cluster) -> None:
    yard = api.yard
    never = handlers_api.add.options(pools=["nowhere"]).submit(1, 1)  # type: ignore[attr-defined]
    with pytest.raises(TimeoutError, match=f"job {never.id} has not ended after 0.2s"):
        never.result(timeout=0.2)
    assert [r.code for r in never.explain()] == ["no_worker"]
    never.cancel()
    with pytest.raises(JobFailed, match=f"job {never.id} \\(add\\) ended canceled"):
        never.result(timeout=30)
    api.add_scheduler()
    api.add_worker("w1")
    failing = handlers_api.fail.submit("on purpose")  # type: ignore[attr-defined]
    with pytest.raises(JobFailed, match=r"ended failed .*on purpose") as caught:
        failing.result(timeout=60)
    assert caught.value.job.state == "failed"
    assert yard.wait(failing.id, timeout=1).state == "failed"


def test_binding_names_the_parameter_and_options_are_checked(api: Cluster) -> None:
    add: Any = handlers_api.add
    with pytest.raises(InvalidInput, match=r"add\.submit: missing a required argument: 'b'"):
        add.submit(1)
    with pytest.raises(InvalidInput,
                       match=r"add\.submit: got an unexpected keyword argument 'c'"):
        add.submit(1, 2, c=3)
    with pytest.raises(InvalidInput, match=r"add.options: unknown options \['urgent'\]"):
        add.options(urgent=True)
    with pytest.raises(InvalidInput, match=r"total\.submit: argument 'values' is not JSON"):
        handlers_api.total.submit({1, 2})  # type: ignore[attr-defined]  # not JSON
    for func, why in ((handlers_api.positional_only, "'a' is positional-only"),
                      (handlers_api.star_args, "'values' is \\*args")):
        with pytest.raises(InvalidInput, match=why):
            api.yard.task_type()(func)
    assert api.yard.jobs() == []


def test_unique_keys_through_the_python_api(api: Cluster) -> None:
    add: Any = handlers_api.add
    first = add.options(unique_key="sum:1+2").submit(1, 2)
    assert add.options(unique_key="sum:1+2").submit(1, 2) == first
    with pytest.raises(Conflict, match=f"held by job {first.id}"):
        add.options(unique_key="sum:1+2", on_duplicate="reject").submit(1, 2)
    assert api.yard.submit("add", {"a": 1, "b": 2}, unique_key="sum:1+2") == first.id
    with pytest.raises(InvalidInput, match="unique_for: 'soon' is not a duration"):
        api.yard.submit("add", {"a": 1, "b": 2}, unique_key="k", unique_for="soon")


def test_graphs_built_in_python_run_with_results_flowing(api: Cluster) -> None:
    api.add_scheduler()
    api.add_worker("w1", capacity=4)
    g = Graph(routing="sums")
    left = g.task("left", handlers_api.add, {"a": 1, "b": 2})
    right = g.task("right", "add", {"a": 10, "b": 20}, reruns=1)
    both = g.task("both", handlers_api.total, {"values": [left.result, right.result]},
                  requires=[left, right])
    g.task("report", handlers_api.greet, {"name": both.job_id},
           requires=[(both, "always")])
    with pytest.raises(InvalidInput, match="task 'left' is in the graph already"):
        g.task("left", "add")
    assert [t.label for t in g.tasks] == ["left", "right", "both", "report"]
    graph = api.yard.wait_graph(api.yard.submit_graph(g), timeout=120)
    assert graph.state == "finished" and graph.routing == "sums"
    by_label = {j.label: j for j in graph.jobs}
    assert by_label["both"].result == 33 and by_label["right"].retries == 1
    assert by_label["report"].result == f"hello {by_label['both'].id}!"
    more = Graph()
    more.task("again", "add", {"a": 0, "b": 1}, requires=["both"])
    (again,) = api.yard.add_graph_tasks(graph.id, more)
    assert api.yard.handle(again).result(timeout=60) == 1
    cyclic = Graph()
    cyclic.task("a", "add", {"a": 1, "b": 1}, requires=["b"])
    cyclic.task("b", "add", {"a": 1, "b": 1}, requires=["a"])
    with pytest.raises(InvalidInput, match="cycle a -> b -> a"):
        api.yard.submit_graph(cyclic)


def test_a_wait_reads_on_wake_ups_not_in_a_loop(db_url: str) -> None:
    """Nothing commits: a read at the start and one at the deadline. A commit that writes
    events (the job's cancel): woken, read again, done."""
    yard = Yard(db_url)
    yard.add_task_type("idle", "shell:true", pools=["nowhere"])
    job_id = yard.submit("idle")
    reads: list[str] = []

    def state() -> str | None:
        job = yard.get_job(job_id)
        reads.append(job.state)
        return job.state if job.state == "canceled" else None

    with pytest.raises(TimeoutError):
        handles.wait_until(yard.store, state, 0.5, "idle")
    # At the start and at the deadline; only the first when, under load, that read itself
    # ended past the deadline. A loop would read many times.
    assert reads in (["pending", "pending"], ["pending"])
    reads.clear()
    waiter = threading.Thread(target=handles.wait_until, args=(yard.store, state, 60, "idle"))
    waiter.start()
    while not reads:  # the waiter has read once and listens
        threading.Event().wait(0.01)
    yard.cancel(job_id)
    waiter.join(60)
    assert reads[0] == "pending" and reads[-1] == "canceled" and len(reads) < 10
    yard.close()


def test_a_scheduler_wakes_when_a_rate_limit_reopens(cluster: Cluster) -> None:
    """The periodic cycle is a minute away: jobs held by a 3/s limit still start as their
    windows reopen, because the scheduler sleeps only until then."""
    yard = cluster.yard
    yard.task_type(rate_limit="3/s")(handlers_api.add)
    cluster.add_scheduler(interval=60.0)
    cluster.add_worker("w1", capacity=8)
    jobs = handlers_api.add.submit_many([(n, n) for n in range(7)])  # type: ignore[attr-defined]
    assert [j.result(timeout=50) for j in jobs] == [2 * n for n in range(7)]
    with yard.store.read() as tx:
        ((starts,),) = tx.raw.all("SELECT COUNT(*) FROM rate_starts")
    assert starts == 7
