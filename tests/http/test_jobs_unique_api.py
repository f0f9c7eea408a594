"""``POST /api/v1/jobs`` with ``unique_key``, ``unique_for`` and ``on_duplicate``: the
rules and errors of the Python API's ``unique_key=`` and ``taskyard submit --unique-key``
(store/transitions/unique_jobs.py), on both stores."""

from __future__ import annotations

from typing import Any

import pytest
from http_helpers import HANDLERS, Api

from taskyard.model.errors import InvalidInput

NOWHERE = {"type": "echo", "pools": ["nowhere"]}  # stays pending: no worker serves it


def _jobs(api: Api) -> list[int]:
    return [j["id"] for j in api.get("/api/v1/jobs", params={"limit": 1000}).json()["items"]]


def test_a_held_key_answers_its_holder_or_409(api: Api) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    with api.client("write") as writer:
        made = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "order-42"})
        assert made.status_code == 201, made.text
        first = made.json()
        assert first["unique_key"] == "order-42" and first["state"] == "pending"
        again = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "order-42",
                                                  "args": {"other": "args"}})
        assert again.status_code == 201 and again.json()["id"] == first["id"]
        # The Python API sees the same holder.
        assert api.yard.submit("echo", {}, pools=["nowhere"],
                               unique_key="order-42") == first["id"]
        refused = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "order-42",
                                                    "on_duplicate": "reject"})
        assert refused.status_code == 409
        assert refused.json()["error"]["message"] == (
            f"unique key 'order-42' of type 'echo' is held by job {first['id']} (pending)")
        other = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "order-43"})
        assert other.status_code == 201 and other.json()["id"] != first["id"]
        # Ended, the job holds its key no more, unless within unique_for of its creation.
        windowed = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "daily",
                                                     "unique_for": "1h"}).json()
        for job in (first, windowed):
            assert writer.post(f"/api/v1/jobs/{job['id']}/cancel").status_code == 200
        renewed = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "order-42"})
        assert renewed.status_code == 201 and renewed.json()["id"] not in (
            first["id"], other.json()["id"])
        held = writer.post("/api/v1/jobs", json={**NOWHERE, "unique_key": "daily",
                                                 "unique_for": 3600})
        assert held.json()["id"] == windowed["id"] and held.json()["state"] == "canceled"


RULES: list[dict[str, Any]] = [
    {"unique_for": "1h"},                                   # a window needs a key
    {"unique_key": ""},
    {"unique_key": "k" * 401},
    {"unique_key": "k", "unique_for": 0},
    {"unique_key": "k", "unique_for": "soon"},
    {"unique_key": "k", "on_duplicate": "maybe"},
]


@pytest.mark.parametrize("fields", RULES, ids=str)
def test_a_rule_violation_is_422_with_the_python_apis_message(api: Api,
                                                              fields: dict[str, Any]) -> None:
    api.post("/api/v1/task-types", json={"name": "echo", "handler": f"{HANDLERS}:echo"})
    with pytest.raises(InvalidInput) as python:
        api.yard.submit("echo", {}, pools=["nowhere"], **fields)
    answer = api.post("/api/v1/jobs", json={**NOWHERE, **fields})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["message"] == str(python.value)
    assert _jobs(api) == []  # nothing changed


@pytest.mark.parametrize(("fields", "named"), [
    ({"unique_key": 5}, "unique_key"),
    ({"unique_key": ["k"]}, "unique_key"),
    ({"unique_key": "k", "unique_for": True}, "unique_for"),
    ({"unique_key": "k", "unique_for": {"hours": 1}}, "unique_for"),
    ({"unique_key": "k", "on_duplicate": None}, "on_duplicate"),
    ({"unique_key": "k", "on_duplicate": 1}, "on_duplicate"),
], ids=str)
def test_a_malformed_unique_field_is_400_naming_it(api: Api, fields: dict[str, Any],
                                                    named: str) -> None:
    answer = api.post("/api/v1/jobs", json={**NOWHERE, **fields})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"].startswith(named), answer.text
    assert _jobs(api) == []
