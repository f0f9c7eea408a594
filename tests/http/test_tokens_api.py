"""Tokens (issue 36, F5, F9, F11): names follow the rule of every name and are revocable
whatever they hold, tokens may expire, and a refused token's 401 never names it."""

from __future__ import annotations

import json
import time
from datetime import datetime

from http_helpers import Api, taskyard, wait_for


def test_a_token_name_with_control_characters_is_refused(api: Api) -> None:
    for name in ("evil\x1b[31m", "nul\x00", "tab\there", " padded", ""):
        answer = api.post("/api/v1/tokens", json={"name": name, "scope": "read"})
        assert answer.status_code == 422, (name, answer.text)
        assert "token name" in answer.json()["error"]["message"]
    cli = taskyard(api.db_url, "token", "create", "--name", "bad\x1bname", "--scope", "read")
    assert cli.returncode == 1 and "control characters" in cli.stderr
    names = [t["name"] for t in api.get("/api/v1/tokens").json()["items"]]
    assert not any("\x1b" in n or "\x00" in n for n in names)


def test_a_name_with_a_slash_is_revocable_through_the_api(api: Api) -> None:
    for name, path in (("ci/deploy", "ci/deploy"), ("a/b/c", "a%2Fb%2Fc")):
        made = api.post("/api/v1/tokens", json={"name": name, "scope": "read"})
        assert made.status_code == 201, made.text
        with api.client(None, Authorization=f"Bearer {made.json()['token']}") as user:
            assert user.get("/api/v1/workers").status_code == 200
        revoked = api.post(f"/api/v1/tokens/{path}/revoke")
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["name"] == name and revoked.json()["revoked"]
        with api.client(None, Authorization=f"Bearer {made.json()['token']}") as user:
            gone = user.get("/api/v1/workers")  # revoked through this server: at once
        assert gone.status_code == 401 and name not in gone.text
        assert gone.json()["error"]["message"] == "token revoked"


def test_an_expired_token_is_refused_without_its_name(api: Api) -> None:
    made = api.post("/api/v1/tokens", json={"name": "short-lived", "scope": "read",
                                            "expires": "2s"})
    assert made.status_code == 201, made.text
    assert made.json()["expires_at"] is not None
    with api.client(None, Authorization=f"Bearer {made.json()['token']}") as user:
        assert user.get("/api/v1/workers").status_code == 200
        wait_for("the token to expire", lambda: user.get("/api/v1/workers").status_code == 401,
                 timeout=30)
        refused = user.get("/api/v1/workers")
    assert refused.json()["error"]["message"] == "token expired"
    assert "short-lived" not in refused.text
    for bad in ("0", "soon", -5, "200y", "99999999999d"):
        answer = api.post("/api/v1/tokens", json={"name": "x", "scope": "read", "expires": bad})
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["error"]["message"].startswith("expires")


def test_token_create_expires_shown_in_token_list(api: Api) -> None:
    before = time.time()
    made = taskyard(api.db_url, "token", "create", "--name", "monthly", "--scope", "write",
                    "--expires", "30d")
    assert made.returncode == 0, made.stderr
    listed = json.loads(taskyard(api.db_url, "token", "list", "--json").stdout)
    found = {t["name"]: t for t in listed}["monthly"]
    expires = datetime.fromisoformat(found["expires_at"].replace("Z", "+00:00")).timestamp()
    assert 30 * 86400 - 60 < expires - before < 30 * 86400 + 60
    table = taskyard(api.db_url, "token", "list").stdout
    assert "EXPIRES" in table and found["expires_at"] in table
    never = {t["name"]: t for t in listed}["test-admin"]
    assert never["expires_at"] is None
    bad = taskyard(api.db_url, "token", "create", "--name", "y", "--scope", "read",
                   "--expires", "99999999999d")
    assert bad.returncode == 2 and "--expires" in bad.stderr and "100 years" in bad.stderr
    with api.client(None, Authorization=f"Bearer {made.stdout.strip()}") as user:
        assert user.get("/api/v1/jobs").status_code == 200
