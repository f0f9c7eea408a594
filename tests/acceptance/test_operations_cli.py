"""``jobs search``, ``jobs cancel`` / ``jobs retry`` on what a search finds, and ``workers
drain``, as real commands on both stores: what is found and in which order, the count
asked for before anything changes, a refusal that changes nothing, one-line errors, and
a live worker drained (its capacity 0, a ``worker-draining`` event)."""

from __future__ import annotations

import subprocess

from acceptance_cli import Cli, stop
from tests.polling import wait_for


def _answer(cli: Cli, reply: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A command that asks first, given ``reply`` on its stdin."""
    return subprocess.run(cli.argv(args), cwd=cli.cwd, env=cli.env, input=reply, text=True,
                          capture_output=True, timeout=60, check=False)


def _states(cli: Cli, *args: str) -> list[str]:
    return [j["state"] for j in cli("jobs", "search", "--json", *args).json()]


def test_search_then_cancel_and_retry_what_it_finds(cli: Cli) -> None:
    for name in ("a", "b"):  # in a pool no worker serves: the jobs stay pending
        cli("task-type", "add", name, "--handler", "shell:true", "--pool", "nowhere").ok()
    a_ids = [int(cli("submit", "a", "--args", f'{{"night": "n{i}"}}').ok().out)
             for i in range(3)]
    b_id = int(cli("submit", "b").ok().out)
    newest, oldest, text, recent, none, bad = cli.many([
        ["jobs", "search", "--type", "a", "--json"],
        ["jobs", "search", "--type", "a", "--sort", "created", "--limit", "2", "--json"],
        ["jobs", "search", "-q", "N1", "--json"],  # text in the args, any case
        ["jobs", "search", "--since", "1h", "--json"],
        ["jobs", "search", "--state", "running"],
        ["jobs", "search", "--since", "yesterdayish"],
    ])
    assert [j["id"] for j in newest.json()] == a_ids[::-1]
    assert [j["id"] for j in oldest.json()] == a_ids[:2]
    assert [j["id"] for j in text.json()] == [a_ids[1]]
    assert sorted(j["id"] for j in recent.json()) == sorted([*a_ids, b_id])
    assert none.ok().out.strip() == "no jobs"
    assert "since: 'yesterdayish' is neither a duration" in bad.one_line_error(1)

    counted = cli("jobs", "cancel", "--type", "a", "--dry-run").ok()
    assert counted.out.strip() == "3 job(s) to cancel"
    refused = _answer(cli, "n\n", "jobs", "cancel", "--type", "a")
    assert refused.returncode == 1 and "cancel 3 job(s)?" in refused.stderr
    assert _states(cli, "--type", "a") == ["pending"] * 3
    done = _answer(cli, "y\n", "jobs", "cancel", "--type", "a")
    assert done.returncode == 0, done
    assert done.stdout.strip() == "cancel: 3 job(s) changed, 0 skipped (changed state " \
        "meanwhile) of 3"
    assert _states(cli, "--type", "a") == ["canceled"] * 3
    assert _states(cli, "--type", "b") == ["pending"]  # not in the set
    retried = cli("jobs", "retry", "--type", "a", "--yes", "--json").json()
    assert (retried["matched"], retried["changed"], retried["skipped"]) == (3, 3, 0)
    assert _states(cli, "--type", "a") == ["pending"] * 3
    nothing = cli("jobs", "retry", "--type", "b", "--json").json()  # pending: not retried
    assert (nothing["matched"], nothing["changed"]) == (0, 0)


def test_a_live_worker_drained_from_the_cli(cli: Cli) -> None:
    worker = cli.popen("worker", "--name", "w1", "--pool", "p", "--capacity", "2")
    try:
        def live() -> bool:
            found = cli("workers", "list", "--json").json()
            return any(w["name"] == "w1" and w["state"] == "active" for w in found)

        wait_for("worker w1 to register", live, timeout=120, every=0.5)
        drained, unknown = cli.many([["workers", "drain", "w1"],
                                     ["workers", "drain", "nobody"]])
        assert drained.ok().out.strip() == "worker w1 draining"
        assert "no live worker 'nobody'" in unknown.one_line_error(1)
        (w1,) = [w for w in cli("workers", "list", "--json").json() if w["name"] == "w1"]
        assert (w1["state"], w1["capacity"]) == ("active", 0)
        (event,) = cli("events", "--topic", "worker-draining", "--json").json()
        assert event["payload"]["worker"] == "w1"
    finally:
        stop(worker)
