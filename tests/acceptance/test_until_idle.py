"""``up --until-idle`` (issue 20): it waits for what can still run — retries waiting
out their delay included — and exits, saying so, when the rest cannot run here (a pool
no worker serves, a far --run-after)."""

from __future__ import annotations

from acceptance_cli import Cli


def test_until_idle_waits_for_what_can_run_and_says_what_it_leaves(cli: Cli) -> None:
    cli("task-type", "add", "hi", "--handler", "shell:echo hi").ok()
    cli("task-type", "add", "flaky", "--handler", 'shell:test "$TASKYARD_ATTEMPT" -ge 3',
        "--retries", "3", "--retry-delay", "2s").ok()
    gpu, far, flaky = (int(cli(*args).ok().out) for args in (
        ["submit", "hi", "--pool", "gpu"], ["submit", "hi", "--run-after", "1d"],
        ["submit", "flaky"]))
    up = cli("up", "--workers", "1", "--until-idle", timeout=240).ok()
    # Two failures, each followed by a 1-2 s delay (jitter), then success: all waited for.
    job = cli("job", "show", str(flaky), "--json").json()
    assert (job["state"], job["attempt"]) == ("succeeded", 3)
    assert [cli("job", "show", str(j), "--json").json()["state"] for j in (gpu, far)] == [
        "pending", "pending"]
    assert "event=until-idle-done left='1 pending in pools no live worker serves (gpu); " \
           "1 pending not due yet (the first at " in up.err


def test_jobs_due_within_the_horizon_are_waited_for(cli: Cli) -> None:
    cli("task-type", "add", "hi", "--handler", "shell:echo hi").ok()
    soon = int(cli("submit", "hi", "--run-after", "3s").ok().out)
    later = int(cli("submit", "hi", "--run-after", "10m").ok().out)
    up = cli("up", "--workers", "1", "--until-idle", "--horizon", "5m", timeout=240).ok()
    assert cli("job", "show", str(soon), "--json").json()["state"] == "succeeded"
    assert cli("job", "show", str(later), "--json").json()["state"] == "pending"
    assert "left='1 pending not due yet" in up.err
