"""A running job's output on its page in a real browser: lines appear as the job writes
them (the log stream), a cancel from the page keeps them; the delay from a line's write
to the page is recorded (p50/p99, tests/browser/artifacts/measurements.json)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from browser_helpers import Server, record, shot, sign_in, strict, wait_for

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

LINES = 60
# Each line carries the time it was written (seconds since the epoch, as the browser's
# clock counts: one machine).
TICKER = (f"shell:for i in $(seq 1 {LINES}); do echo \"tick $i $(date +%s.%N)\"; sleep 0.1; "
          "done; echo done-ticking >&2; sleep 300")

# Records when each line reached #stdout, by the browser's clock.
OBSERVE = """() => {
  window.arrivals = {};
  window.before = {};
  const seen = (into) => {
    const node = document.querySelector('#stdout');
    if (!node) return;
    for (const line of node.textContent.split('\\n')) {
      const m = line.match(/^tick (\\d+) ([\\d.]+)$/);
      if (m && !(m[1] in window.arrivals) && !(m[1] in window.before)) {
        into[m[1]] = Date.now() / 1000 - Number(m[2]);
      }
    }
  };
  seen(window.before);  // there when the page opened: no delay to measure
  new MutationObserver(() => seen(window.arrivals)).observe(
    document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_a_running_job_s_lines_appear_as_written_and_a_cancel_keeps_them(
        server: Server, page: Any) -> None:
    violations = strict(page, server)
    with server.api() as api:
        assert api.post("/api/v1/task-types", json={
            "name": "ticker", "handler": TICKER}).status_code == 201
        job = api.post("/api/v1/jobs", json={"type": "ticker"}).json()
    sign_in(page, server)
    page.goto(f"{server.url}/#/jobs/{job['id']}")
    page.wait_for_selector(".page-head .badge[data-state=running]")
    page.evaluate(OBSERVE)
    page.wait_for_selector("#stdout:has-text('tick 3 ')")
    assert page.inner_text("#log-note").startswith("Live")
    # Later lines come on the open stream, with no reload of the page.
    page.wait_for_selector(f"#stdout:has-text('tick {LINES} ')", timeout=60_000)
    page.wait_for_selector("#stderr:has-text('done-ticking')")
    with server.api() as api:
        assert api.get(f"/api/v1/jobs/{job['id']}").json()["state"] == "running"
    shot(page, "job-live-logs")
    delays = sorted(page.evaluate("Object.values(window.arrivals)"))
    assert len(delays) >= LINES // 2, delays  # the first were there when the page opened
    record("live log delay, write to page (s)", {
        "lines": len(delays), "p50": round(statistics.median(delays), 3),
        "p99": round(delays[min(len(delays) - 1, int(len(delays) * 0.99))], 3)})
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-job")
    page.wait_for_selector(".page-head .badge[data-state=canceled]")
    wait_for("the kept output", lambda: f"tick {LINES} " in page.inner_text("#stdout"))
    assert page.inner_text("#stdout").startswith("tick 1 ")
    assert "done-ticking" in page.inner_text("#stderr")
    assert violations == [], violations
