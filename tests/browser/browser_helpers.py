"""The browser tests' parts: Debian's chromium driven by Playwright, and a real
``taskyard up --http`` with workers on a fresh database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.polling import free_port, wait_for

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"
ROOT = Path(__file__).resolve().parents[2]


def record(name: str, value: Any) -> None:
    """Keep a measurement beside the screenshots (reported, never asserted)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "measurements.json"
    found = json.loads(path.read_text()) if path.exists() else {}
    found[name] = value
    path.write_text(json.dumps(found, indent=2, sort_keys=True))


@dataclass
class Server:
    """``taskyard up --workers N --http PORT`` in a subprocess."""

    db_url: str
    port: int
    proc: subprocess.Popen[str]
    token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120,
                            headers={"Authorization": f"Bearer {self.token}"})

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


def taskyard(db_url: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "taskyard", "--db", db_url, *args],
                          check=True, capture_output=True, text=True, timeout=120,
                          env=child_env())
    return done.stdout


def child_env() -> dict[str, str]:
    """The environment of the taskyard processes the tests start."""
    return {**{k: v for k, v in os.environ.items() if k != "TASKYARD_DB"},
            "PYTHONPATH": str(ROOT)}


def start_server(db_url: str, workers: int = 2) -> Server:
    taskyard(db_url, "init")
    token = taskyard(db_url, "token", "create", "--name", "browser", "--scope", "admin").strip()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskyard", "--db", db_url, "up", "--workers", str(workers),
         "--capacity", "4", "--http", str(port)],
        env=child_env(), text=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    server = Server(db_url, port, proc, token)

    def healthy() -> bool:
        assert proc.poll() is None, server.stop()
        try:
            return httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for("the server", healthy)
    return server


def shot(page: Any, name: str) -> None:
    """A screenshot of the viewport in the artifacts (docs/images are copied from them)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def sign_in(page: Any, server: Server) -> None:
    """Sign in through the dialog (a wrong token first: its error is shown)."""
    page.goto(server.url + "/")
    page.wait_for_selector("#signin[open]")
    page.fill("#token-input", "ty_wrong")
    page.click("#signin-button")
    page.wait_for_selector("#signin-error:has-text('unknown token')")
    page.fill("#token-input", server.token)
    page.click("#signin-button")
    page.wait_for_selector("#signin:not([open])", state="attached")
    page.wait_for_selector("#live.on")
    assert page.inner_text("#who") == "browser · admin"


def no_why_card(page: Any) -> bool:
    """The job page shows no "Why is it not running?" card (the job runs or ended)."""
    return (page.locator("#why").count() == 0
            and page.locator("h2:text('Why is it not running?')").count() == 0)


# What the server will send once the dashboard has its CSP (the HTTP issue): the page
# must run under it with no inline script or style and no eval.
STRICT_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


def strict(page: Any, server: Server) -> list[str]:
    """Serve the dashboard's page with STRICT_CSP; the violations (and uncaught errors)
    the browser reports."""
    violations: list[str] = []

    def with_csp(route: Any) -> None:
        response = route.fetch()
        route.fulfill(response=response,
                      headers={**response.headers, "content-security-policy": STRICT_CSP})

    page.route(f"{server.url}/", with_csp)
    page.on("console", lambda m: violations.append(m.text)
            if "Content Security Policy" in m.text or "Uncaught" in m.text else None)
    page.on("pageerror", lambda e: violations.append(f"page error: {e}"))
    return violations
