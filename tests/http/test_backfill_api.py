"""``POST /api/v1/schedules/{name}/backfill`` and ``/backfill/cancel``; a schedule's
``catchup_window`` and ``overlap`` over HTTP."""

from __future__ import annotations

from http_helpers import HANDLERS, Api


def _schedule(api: Api) -> None:
    assert api.post("/api/v1/task-types", json={
        "name": "echo", "handler": f"{HANDLERS}:echo"}).status_code == 201
    made = api.post("/api/v1/schedules", json={
        "name": "hourly", "type": "echo", "cron": "0 * * * *", "overlap": "buffer-one",
        "catchup_window": "1d"})
    assert made.status_code == 201, made.text
    assert (made.json()["overlap"], made.json()["catchup_window"]) == ("buffer-one", 86400.0)


def test_backfill_over_http(api: Api) -> None:
    _schedule(api)
    with api.client("write") as writer:
        dry = writer.post("/api/v1/schedules/hourly/backfill",
                          json={"from": "3h", "to": "now", "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert len(dry.json()["ticks"]) in (3, 4) and dry.json()["jobs"] is None
        made = writer.post("/api/v1/schedules/hourly/backfill",
                           json={"from": "3h", "max_active": 1})
        assert made.status_code == 200, made.text
        body = made.json()
        assert len(body["jobs"]) == len(dry.json()["ticks"]) and body["existing"] == 0
        again = writer.post("/api/v1/schedules/hourly/backfill", json={"from": "3h"})
        assert again.json()["jobs"] == [] and again.json()["existing"] == len(body["jobs"])
        first = api.get(f"/api/v1/jobs/{body['jobs'][0]}").json()
        assert first["logical_time"] == body["ticks"][0] and first["state"] == "pending"
        canceled = writer.post("/api/v1/schedules/hourly/backfill/cancel")
        assert canceled.json() == {"canceled": len(body["jobs"])}


def test_backfill_refusals(api: Api) -> None:
    _schedule(api)
    with api.client("read") as reader:
        assert reader.post("/api/v1/schedules/hourly/backfill",
                           json={"from": "3h"}).status_code == 403
    with api.client("write") as writer:
        assert writer.post("/api/v1/schedules/nope/backfill",
                           json={"from": "3h"}).status_code == 404
        future = writer.post("/api/v1/schedules/hourly/backfill",
                             json={"from": "3h", "to": "2999-01-01T00:00:00Z"})
        assert future.status_code == 422 and "in the future" in future.text
        bad = writer.post("/api/v1/schedules/hourly/backfill", json={"from": "soon"})
        assert bad.status_code == 422 and "--from: 'soon'" in bad.text
        assert writer.post("/api/v1/schedules/hourly/backfill",
                           json={"from": "3h", "max_active": 0}).status_code == 400
    bad_overlap = api.post("/api/v1/schedules", json={"name": "x", "type": "echo",
                                                      "every": "1m", "overlap": "later"})
    assert bad_overlap.status_code == 422 and "overlap" in bad_overlap.text
