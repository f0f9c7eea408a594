"""What the CLI prints (issue 20, items 11 and 13), through the real command on both
stores: seed 002's listings, task types without Python reprs, unknown names that fail,
`job retry`, `job show`'s args as the handler got them, `graph show`'s why, and
`submit --wait`."""

from __future__ import annotations

import re
import signal
import textwrap

from acceptance_cli import Cli

TYPES = textwrap.dedent("""
    task_types:
      sh: {handler: "shell:echo {name}", timeout: 30s, retries: 2}
      py: {handler: "python:acc_handlers:add"}
      fails: {handler: "shell:echo nope >&2; exit 3"}
      show: {handler: "shell:echo {total} > $TASKYARD_RESULT"}
""")


def _apply(cli: Cli) -> None:
    (cli.cwd / "types.yaml").write_text(TYPES)
    cli("apply", str(cli.cwd / "types.yaml")).ok()


def _blocks(text: str) -> dict[int, str]:
    """``Job ID`` blocks of a seed-style listing, by id."""
    return {int(m.group(1)): m.group(0)
            for m in re.finditer(r"^Job (\d+)\n(?:  .*\n?)*", text, re.MULTILINE)}


def test_listings_show_each_job_as_the_seed_does(cli: Cli) -> None:
    _apply(cli)
    due = int(cli("submit", "sh", "--args", '{"name": "now"}').ok().out)
    later = int(cli("submit", "sh", "--args", '{"name": "later"}', "--run-after", "1h").ok().out)
    cli("schedule", "add", "tick", "sh", "--every", "1h", "--args", '{"name": "tick"}').ok()
    other = int(cli("submit", "py", "--args", '{"a": 1, "b": 2}').ok().out)
    pending, as_json, limited, missing, listed = cli.many([
        ["jobs", "list-pending", "sh"], ["jobs", "list-pending", "sh", "--json"],
        ["jobs", "list-pending", "sh", "--limit", "1"], ["jobs", "list-pending", "nosuch"],
        ["jobs", "list", "-v"],
    ])
    blocks = _blocks(pending.ok().out)
    ticked = [j for j in blocks if j != due]
    assert pending.out.startswith("Found 2 sh job(s)\n")
    assert later not in blocks and other not in blocks  # not due, not of that type
    assert len(ticked) == 1
    assert "  Policy: one-shot\n" in blocks[due] and "  Interval: none\n" in blocks[due]
    assert '  Status: pending\n  Priority: 0\n  Args:\n    name: "now"' in blocks[due]
    # Due, so in the past: how far depends on how long a loaded machine took to get here.
    assert re.search(r"  Next run: (now|an? \w+ ago|\d+ \w+ ago) \(\d{4}-", blocks[due])
    assert "  Policy: recurring (schedule tick)\n" in blocks[ticked[0]]
    assert "  Interval: 1h\n" in blocks[ticked[0]]
    assert [j["id"] for j in as_json.json()] == sorted(blocks)
    assert as_json.json()[1]["schedule"] == "tick"
    assert list(_blocks(limited.ok().out)) == [due]
    assert "no task type 'nosuch'" in missing.one_line_error(1)
    everything = _blocks(listed.ok().out)
    assert set(everything) == {due, later, other, *ticked}
    assert re.search(r"  Next run: in (an hour|\d+ minutes) ", everything[later])


def test_task_types_read_as_the_cli_writes_them(cli: Cli) -> None:
    _apply(cli)
    (cli.cwd / "bad.yaml").write_text("task_types:\n  x: {handler: 'shell:true', timeout: abc}\n")
    verbose, missing, bad = cli.many([
        ["task-type", "list", "-v", "-t", "sh"], ["task-type", "list", "-t", "sh", "-t", "zz"],
        ["apply", str(cli.cwd / "bad.yaml")],
    ])
    out = verbose.ok().out
    assert out.startswith("Known task types:\nsh: shell:echo {name}\n")
    for line in ("  timeout: 30s", "  retries: 2", "  retry_delay: 0s", "  locks: none",
                 "  max_queue_length: none", "  retry_max_delay: 1h", "  simultaneous: true"):
        assert line in out.splitlines(), line
    assert "None" not in out and "0:00" not in out
    assert "no task type 'zz'" in missing.one_line_error(1)
    line = bad.one_line_error(1)
    assert line.count("task type 'x'") == 1, line


def test_retry_show_graph_and_wait(cli: Cli) -> None:
    _apply(cli)
    graph = cli.cwd / "g.yaml"
    graph.write_text(textwrap.dedent("""
        tasks:
          build: {type: py, args: {a: 2, b: 40}}
          report:
            type: show
            requires: [build]
            args: {total: {$result: build}}
    """))
    graph_id = int(cli("graph", "submit", str(graph)).ok().out)
    waiting = cli("graph", "show", str(graph_id)).ok().out
    assert re.search(r"report .* waiting .*waits for job 1 \(build\) of type py, which is",
                     waiting), waiting
    failing = int(cli("submit", "fails").ok().out)
    cli("up", "--workers", "1", "--until-idle", timeout=240).ok()
    report = cli("job", "show", "2", "--json").json()
    assert report["args"] == {"total": {"$result": "build"}}
    assert report["dispatched_args"]["total"]["sum"] == 42
    args_line = next(line for line in cli("job", "show", "2").ok().out.splitlines()
                     if line.startswith("args:"))
    assert '"sum": 42' in args_line and "$result" not in args_line
    assert cli("job", "retry", str(failing)).ok().out == f"job {failing} retried: pending\n"
    up = cli.popen("up", "--workers", "1")
    try:
        ok, bad = cli.many([["submit", "py", "--args", '{"a": 1, "b": 1}', "--wait"],
                            ["submit", "fails", "--wait"]], timeout=240)
    finally:
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=120)
    assert re.fullmatch(r"\d+\n", ok.ok().out)
    assert cli("job", "show", ok.out.strip(), "--json").json()["state"] == "succeeded"
    assert bad.code == 1 and re.fullmatch(r"\d+\n", bad.out), bad
    assert bad.err == f"taskyard: error: job {bad.out.strip()} failed: exit code 3\n"
