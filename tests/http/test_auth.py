"""Deny by default: every operation of the OpenAPI document but /healthz refuses a missing,
wrong or revoked token (401) and a token below its scope (403), and lets its own scope in."""

from __future__ import annotations

import json
import subprocess

import httpx
from http_helpers import Api, wait_for
from http_helpers import taskyard as run_taskyard

from taskyard.store.transitions.tokens import list_tokens

# The contract: read GETs; write submits, cancels, retries; admin declares.
ADMIN_PATHS = ("/api/v1/task-types", "/api/v1/apply", "/api/v1/schedules", "/api/v1/tokens",
               "/api/v1/prune")
BELOW = {"write": "read", "admin": "write"}


def needed_scope(method: str, path: str) -> str:
    if path.endswith(("/backfill", "/backfill/cancel")):
        return "write"  # a schedule's backfill submits and cancels jobs, as a writer may
    if path.startswith("/api/v1/pools/") and method == "post":
        return "admin"  # pause and resume a pool
    if path.startswith("/api/v1/schedules/") and path.endswith("/run"):
        return "write"  # running a schedule now submits a job, as a submit does
    if path.startswith(ADMIN_PATHS) and (method != "get" or path.startswith("/api/v1/tokens")):
        return "admin"
    return "read" if method == "get" else "write"


def operations(api: Api) -> list[tuple[str, str]]:
    doc = api.get("/api/v1/openapi.json").json()
    found = []
    for path, item in doc["paths"].items():
        concrete = (path.replace("{job_id}", "1").replace("{graph_id}", "1")
                    .replace("{name}", "nothing-here"))
        found.extend((method, concrete) for method in item)
    return found


def call(client: httpx.Client, method: str, path: str) -> httpx.Response:
    if path.endswith("/stream"):
        with client.stream(method, path, params={"after": 0}) as response:
            response.close()
            return response
    body = {"json": {}} if method in ("post", "put") else {}
    return client.request(method, path, **body)


def test_every_operation_but_healthz_needs_a_token_of_its_scope(api: Api) -> None:
    ops = operations(api)
    assert ("get", "/healthz") in ops and len(ops) > 20
    with api.client(None) as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}
        # The dashboard's files hold no data: they load without a token.
        assert anonymous.get("/").status_code == 200
    revoked = api.post("/api/v1/tokens", json={"name": "gone", "scope": "admin"}).json()["token"]
    assert api.post("/api/v1/tokens/gone/revoke").json()["revoked"] is True
    with api.client(None) as anonymous, \
            api.client(None, Authorization="Bearer ty_not-a-token") as wrong, \
            api.client(None, Authorization=f"Bearer {revoked}") as old, \
            api.client(None, Authorization="Basic dXNlcjpwdw==") as basic:
        for method, path in ops:
            if path == "/healthz":
                continue
            for client, message in ((anonymous, "missing token"), (wrong, "unknown token"),
                                    (old, "token revoked"), (basic, "missing token")):
                answer = call(client, method, path)
                assert answer.status_code == 401, (method, path, answer.text)
                if not path.endswith("/stream"):
                    assert message in answer.json()["error"]["message"]
                    assert "gone" not in answer.text  # a refusal names no token (F9)
                    assert answer.headers["www-authenticate"] == "Bearer"
    for method, path in ops:
        if path == "/healthz":
            continue
        scope = needed_scope(method, path)
        if scope in BELOW:
            with api.client(BELOW[scope]) as low:
                answer = call(low, method, path)
            assert answer.status_code == 403, (method, path, answer.text)
            assert f"this needs {scope}" in answer.json()["error"]["message"]
        with api.client(scope) as enough:
            answer = call(enough, method, path)
        assert answer.status_code not in (401, 403), (method, path, answer.text)


def test_tokens_are_stored_hashed_and_used_tokens_are_dated(api: Api) -> None:
    with api.client("read") as reader:
        assert reader.get("/api/v1/jobs").status_code == 200
    rows = {t.name: t for t in list_tokens(api.yard.store)}
    assert rows["test-read"].last_used_at is not None
    assert rows["test-write"].last_used_at is None
    # No secret anywhere in the table: only hashes (64 hex characters).
    with api.yard.store.engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT hash FROM api_tokens").scalars().all()
    assert all(len(h) == 64 and h not in api.tokens.values() for h in stored)
    assert not any(secret in " ".join(stored) for secret in api.tokens.values())


def test_token_commands(api: Api) -> None:
    def taskyard(*args: str) -> subprocess.CompletedProcess[str]:
        return run_taskyard(api.db_url, *args)

    created = taskyard("token", "create", "--name", "ci", "--scope", "write")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert created.stdout == secret + "\n" and secret.startswith("ty_")
    with api.client(None, Authorization=f"Bearer {secret}") as ci:
        assert ci.get("/api/v1/workers").status_code == 200
        assert ci.post("/api/v1/task-types", json={"name": "x", "handler": "shell:true"}
                       ).status_code == 403
    again = taskyard("token", "create", "--name", "ci", "--scope", "read")
    assert again.returncode == 1 and "exists already" in again.stderr
    bad = taskyard("token", "create", "--name", "x", "--scope", "root")
    assert bad.returncode == 2
    listed = taskyard("token", "list", "--json")
    assert {t["name"]: t["scope"] for t in json.loads(listed.stdout)}["ci"] == "write"
    assert secret not in listed.stdout
    assert taskyard("token", "revoke", "ci").returncode == 0
    with api.client(None, Authorization=f"Bearer {secret}") as ci:
        # Revoked in another process: the server believes a token's row for a second.
        wait_for("the revocation to take effect", lambda: ci.get(
            "/api/v1/workers").status_code == 401, timeout=30)
    missing = taskyard("token", "revoke", "ci")
    assert missing.returncode == 1 and "no live token 'ci'" in missing.stderr
    # The name is free again once revoked.
    assert taskyard("token", "create", "--name", "ci", "--scope", "read").returncode == 0
