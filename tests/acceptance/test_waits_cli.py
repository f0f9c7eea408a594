"""The real ``taskyard`` command with approvals, waits and sleeps, on both stores:
``graph submit``, ``jobs list --state awaiting``, ``job show``, ``job approve | deny``,
``signal``, refusals (exit 1 and 2, one line, nothing changed), ``up --until-idle``."""

from __future__ import annotations

import textwrap

from acceptance_cli import Cli

RELEASE = textwrap.dedent("""
    tasks:
      build: {type: step, args: {what: build}}
      approve: {approval: {timeout: 1h}, requires: [build]}
      ready: {wait: {signal: deploy-ready, key: v2, timeout: 30m}}
      settle: {sleep: 2s, requires: [build]}
      deploy:
        type: step
        requires: [approve, ready, settle]
        args: {what: {$result: ready}}
""")


def test_an_approval_graph_through_the_cli(cli: Cli) -> None:
    cli("init").ok()
    cli("task-type", "add", "step", "--handler",
        "shell:echo {what}; printf %s {what} > $TASKYARD_RESULT").ok()
    (cli.cwd / "release.yaml").write_text(RELEASE)
    graph_id = cli("graph", "submit", "release.yaml").ok().out.strip()
    jobs = {j["label"]: j for j in cli("graph", "show", graph_id, "--json").json()["jobs"]}
    awaiting = cli("jobs", "list", "--state", "awaiting", "--json").json()
    assert [j["label"] for j in awaiting] == ["ready"]
    assert awaiting[0]["kind"] == "wait" and awaiting[0]["type"] is None
    approve, ready = jobs["approve"]["id"], jobs["ready"]["id"]
    assert awaiting[0]["id"] == ready

    refused = cli("job", "approve", str(approve)).one_line_error(1)
    assert refused.endswith(f"job {approve} is not an awaiting approval: it is an approval, "
                            "waiting")
    # A signal sent now is stored: the wait takes it at once (it awaits already).
    assert cli("signal", "deploy-ready", "--key", "v2", "--payload", '"v2.0"').ok().out == "1\n"
    assert cli("signal", "deploy-ready", "--key", "v2").ok().out == "0\n"  # applied once
    run = cli("up", "--workers", "1", "--until-idle", timeout=120).ok()
    assert "1 awaiting a decision or a signal" in run.err
    shown = cli("job", "show", str(approve)).ok().out
    assert "kind:      approval" in shown
    assert f"approve:   taskyard job approve {approve} [--note TEXT]" in shown
    assert f"deny:      taskyard job deny {approve} [--note TEXT]" in shown
    explain = cli("job", "show", str(approve), "--json").json()["explain"]
    assert explain[0]["code"] == "awaiting_approval"
    decided = cli("job", "approve", str(approve), "--note", "ship it").ok().out
    assert decided == f"job {approve} approved: succeeded\n"
    # The sleep (2 s) ends on the scheduler's clock; then deploy runs with the payload.
    cli("up", "--workers", "1", "--until-idle", timeout=120).ok()
    graph = cli("graph", "show", graph_id, "--json").json()
    assert graph["state"] == "finished"
    done = {j["label"]: j for j in graph["jobs"]}
    assert done["approve"]["result"]["decision"] == "approved"
    assert done["approve"]["result"]["note"] == "ship it"
    assert done["approve"]["result"]["by"]  # the user who ran the command
    assert done["ready"]["result"] == "v2.0"
    assert done["deploy"]["result"] == "v2.0"
    assert done["settle"]["state"] == "succeeded"
    table = cli("graph", "show", graph_id).ok().out
    assert "approved by" in table and "ship it" in table


def test_deny_and_bad_usage(cli: Cli) -> None:
    cli("init").ok()
    cli("task-type", "add", "step", "--handler", "shell:true").ok()
    (cli.cwd / "g.yaml").write_text(
        "tasks: {approve: {approval: {}}, deploy: {type: step, requires: [approve]}}\n")
    graph_id = cli("graph", "submit", "g.yaml").ok().out.strip()
    approve = cli("graph", "show", graph_id, "--json").json()["jobs"][0]["id"]
    assert cli("job", "deny", str(approve), "--note", "no").ok().out == (
        f"job {approve} denied: failed\n")
    states = {j["label"]: j["state"] for j in cli("graph", "show", graph_id,
                                                  "--json").json()["jobs"]}
    assert states == {"approve": "failed", "deploy": "dependency_failed"}
    assert "not valid JSON" in cli("signal", "s", "--payload", "{").one_line_error(2)
    assert "job 999999" in cli("job", "approve", "999999").one_line_error(1)
    assert "signal name" in cli("signal", "bad\u0001name").one_line_error(1)
    (cli.cwd / "bad.yaml").write_text("tasks: {a: {approval: {}, type: step}}\n")
    line = cli("graph", "submit", "bad.yaml").one_line_error(1)
    assert line.endswith("task 'a': give exactly one of type, approval, wait or sleep "
                         "(it has approval, type)")
