"""``taskyard pools pause | resume`` through the real command, on both stores: nothing
new placed in a paused pool (``up --until-idle`` leaves its jobs, saying why), ``pools
list --json`` has ``paused``, resume places them."""

from __future__ import annotations

from acceptance_cli import Cli


def test_pause_and_resume_a_pool(cli: Cli) -> None:
    cli("init").ok()
    cli("task-type", "add", "t", "--handler", "shell:true").ok()
    assert cli("pools", "pause", "default").ok().out == "pool default paused\n"
    listed = cli("pools", "list", "--json").json()
    assert [(p["name"], p["paused"]) for p in listed] == [("default", True)]
    job = cli("submit", "t").ok().out.strip()
    run = cli("up", "--workers", "1", "--until-idle", timeout=120).ok()
    assert "1 pending in paused pools (default)" in run.err
    why = cli("job", "show", job, "--json").json()["explain"]
    assert why[0]["code"] == "pool_paused"
    assert cli("job", "show", job, "--json").json()["state"] == "pending"
    assert cli("pools", "resume", "default").ok().out == "pool default resumed\n"
    cli("up", "--workers", "1", "--until-idle", timeout=120).ok()
    assert cli("job", "show", job, "--json").json()["state"] == "succeeded"
    assert not cli("pools", "list", "--json").json()[0]["paused"]
    assert "no pool 'nowhere'" in cli("pools", "pause", "nowhere").one_line_error(1)
