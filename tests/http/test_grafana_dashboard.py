"""docs/grafana/taskyard-dashboard.json asks only for series a real ``/metrics`` gives,
with the labels it has."""

from __future__ import annotations

import json
import re
from pathlib import Path

from http_helpers import HANDLERS, Api, wait_for
from prometheus_client.parser import text_string_to_metric_families

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "taskyard-dashboard.json"
SELECTOR = re.compile(r"(taskyard_[a-z_]+)(\{([^}]*)\})?")


def _labels(api: Api) -> dict[str, set[str]]:
    """Each series' name in ``/metrics`` and the labels it has."""
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(api.get("/metrics").text):
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
    return labels


def test_every_query_names_a_series_and_labels_that_metrics_gives(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    api.add_worker()
    api.add_scheduler()
    api.wait_job(api.post("/api/v1/jobs", json={"type": "echo"}).json()["id"])
    api.post("/api/v1/jobs", json={"type": "echo", "pools": ["nobody"]})  # a queue depth
    # The history counts an event once every transaction older than it has ended, on
    # PostgreSQL any transaction of the cluster (another test's too): wait for the job.
    labels: dict[str, set[str]] = wait_for("the job's attempt in the history", lambda: (
        found if "taskyard_attempts_total" in (found := _labels(api)) else None))
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    queries += [v["query"]["query"] for v in dashboard["templating"]["list"]
                if v["type"] == "query"]
    assert queries
    for query in queries:
        for name, _, selector in SELECTOR.findall(query):
            assert name in labels, (name, query)
            for label in re.findall(r"([a-z_]+)\s*[=!]~?", selector):
                assert label in labels[name], (name, label, query)
        for grouped in re.findall(r"by \(([a-z_, ]+)\)", query):
            names = SELECTOR.findall(query)
            for label in (g.strip() for g in grouped.split(",")):
                assert any(label in labels[n] for n, _, _ in names), (label, query)
