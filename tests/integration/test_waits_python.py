"""The Python API of waits: ``Graph.approval / wait / sleep``, ``Yard.approve / deny /
signal``, on both stores with a real scheduler and worker."""

from __future__ import annotations

import pytest

from conftest import Cluster
from taskyard import Conflict, Graph


def test_a_graph_built_in_python_waits_for_approval_and_signal(cluster: Cluster) -> None:
    import handlers_decorated

    yard = cluster.yard
    yard.task_type()(handlers_decorated.shout)
    g = Graph(routing="release")
    build = g.task("build", handlers_decorated.shout, {"text": "built"})
    approve = g.approval("approve", timeout="1h", requires=[build])
    ready = g.wait("ready", "deploy-ready", key="v2")
    nap = g.sleep("settle", 0.5, requires=[build])
    g.task("deploy", handlers_decorated.shout, {"text": ready.result},
           requires=[approve, ready, nap])
    graph_id = yard.submit_graph(g)
    cluster.add_scheduler(interval=0.2)
    cluster.add_worker("w1")
    jobs = {j.label: j for j in yard.graph(graph_id).jobs}
    assert yard.signal("deploy-ready", key="v2", payload="shipped", by="ci") == [
        jobs["ready"].id]
    with pytest.raises(Conflict, match="not an awaiting approval"):
        yard.approve(jobs["ready"].id)
    yard.wait(jobs["build"].id, 30)
    job = yard.approve(jobs["approve"].id, note="ok")
    assert job.result["decision"] == "approved" and job.result["by"]
    done = yard.wait_graph(graph_id, 60)
    assert done.state == "finished"
    result = {j.label: j.result for j in done.jobs}["deploy"]
    assert result == "SHIPPED"


def test_deny_from_python(cluster: Cluster) -> None:
    yard = cluster.yard
    g = Graph()
    g.approval("approve")
    graph_id = yard.submit_graph(g)
    (job,) = yard.graph(graph_id).jobs
    assert yard.deny(job.id, note="no", by="ann").result == {
        "decision": "denied", "note": "no", "by": "ann"}
    assert yard.graph(graph_id).state == "blocked"
