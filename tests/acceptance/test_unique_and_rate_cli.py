"""``submit --unique-key/--unique-for/--on-duplicate`` and ``task-type add --rate-limit
--rate-key``, as real commands on both stores: printed ids, JSON fields, one-line errors
with exit 1 (a held key) or 2 (a malformed limit), and explain naming the limit."""

from __future__ import annotations

from acceptance_cli import Cli


def test_submit_with_a_unique_key_prints_the_holder_or_fails(cli: Cli) -> None:
    cli("task-type", "add", "report", "--handler", "shell:true", "--pool", "nowhere").ok()
    first = cli("submit", "report", "--unique-key", "daily:2024-06-01", "--unique-for", "1d")
    job_id = int(first.ok().out)
    again, other, refused, bad = cli.many([
        ["submit", "report", "--unique-key", "daily:2024-06-01"],
        ["submit", "report", "--unique-key", "daily:2024-06-02"],
        ["submit", "report", "--unique-key", "daily:2024-06-01", "--on-duplicate", "reject"],
        ["submit", "report", "--unique-key", "k", "--on-duplicate", "ignore"],
    ])
    assert int(again.ok().out) == job_id and int(other.ok().out) != job_id
    line = refused.one_line_error(1)
    assert f"unique key 'daily:2024-06-01' of type 'report' is held by job {job_id}" in line
    assert "--on-duplicate" in bad.one_line_error(2)
    shown = cli("job", "show", str(job_id), "--json").json()
    assert shown["unique_key"] == "daily:2024-06-01"
    assert len(cli("jobs", "list", "--json").json()) == 2


def test_task_type_rate_limit_is_stored_shown_and_explained(cli: Cli) -> None:
    cli("task-type", "add", "mail", "--handler", "shell:true", "--rate-limit", "2/m",
        "--rate-key", "tenant:{tenant}", "--pool", "p").ok()
    malformed, no_key = cli.many([
        ["task-type", "add", "x", "--handler", "shell:true", "--rate-limit", "2/d"],
        ["task-type", "add", "y", "--handler", "shell:true", "--rate-key", "{t}"],
    ])
    assert "--rate-limit" in malformed.one_line_error(2)
    assert "rate_key needs a rate_limit" in no_key.one_line_error(1)
    (spec,) = cli("task-type", "list", "--json").json()
    assert (spec["rate_limit"], spec["rate_key"]) == ("2/m", "tenant:{tenant}")
    assert "rate_limit: 2/m" in cli("task-type", "list", "-v").ok().out
    # A worker serves the pool; each submit runs the cycle: two start, the limit holds one.
    worker = cli.popen("worker", "--pool", "p", "--name", "w", "--capacity", "5")
    try:
        _until_worker(cli)
        ids = [int(cli("submit", "mail", "--args", '{"tenant": 7}').ok().out)
               for _ in range(3)]
        shown = cli("job", "show", str(max(ids)), "--json").json()  # the worker still serves
    finally:
        worker.terminate()
        worker.communicate(timeout=60)
    waiting = [j for j in cli("jobs", "list", "--json").json() if j["state"] == "pending"]
    assert [j["id"] for j in waiting] == [max(ids)]
    assert shown["rate_key"] == "tenant:7"
    (why,) = shown["explain"]
    assert why["code"] == "rate_limited"
    assert why["message"].startswith("rate limit 2/m of mail on key tenant:7: 2 starts in "
                                     "the last 1m")


def _until_worker(cli: Cli) -> None:
    for _ in range(120):
        if cli("workers", "list", "--json").json():
            return
    raise AssertionError("the worker never registered")
