"""``/metrics``: Prometheus text whose numbers agree with the database."""

from __future__ import annotations

from http_helpers import HANDLERS, Api, wait_for
from prometheus_client.parser import text_string_to_metric_families


def _samples(api: Api) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = api.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        assert family.name.startswith("taskyard_"), family.name
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_follow_the_database(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo",
                                         "pools": ["fast"]})
    with api.client("write") as writer:
        for _ in range(3):
            writer.post("/api/v1/jobs", json={"type": "echo"})
    before = _samples(api)
    assert before[("taskyard_jobs", (("state", "pending"),))] == 3
    assert before[("taskyard_queue_depth", (("type", "echo"),))] == 3
    assert before[("taskyard_jobs_unfinished", (("pool", "fast"), ("state", "pending")))] == 3
    assert before[("taskyard_workers_alive", ())] == 0
    assert before[("taskyard_submit_to_start_seconds_count", ())] == 0
    api.add_worker("w1", capacity=4)
    api.add_scheduler()
    # The worker serves the default pool only: nothing starts, the pool shows its room.
    wait_for("the worker", lambda: _samples(api)[("taskyard_workers_alive", ())] == 1)
    now = _samples(api)
    assert now[("taskyard_pool_capacity", (("pool", "default"),))] == 4
    assert now[("taskyard_pool_capacity_free", (("pool", "default"),))] == 4
    with api.client("write") as writer:
        ids = [writer.post("/api/v1/jobs", json={"type": "echo", "pools": ["default"]}
                           ).json()["id"] for _ in range(2)]
    for job_id in ids:
        api.wait_job(job_id)
    # Ended states may be counted a moment late (api/http/state_counts.py): waited for.
    after = wait_for("two starts measured", lambda: (
        (s := _samples(api))[("taskyard_submit_to_start_seconds_count", ())] == 2
        and s[("taskyard_jobs", (("state", "succeeded"),))] == 2 and s))
    assert after[("taskyard_queue_depth", (("type", "echo"),))] == 3
    assert after[("taskyard_submit_to_start_seconds_sum", ())] >= 0
    assert after[("taskyard_pool_workers", (("pool", "default"),))] == 1
