"""Bad input through the real CLI (issue 20): one clear line on stderr, nothing written,
and the same answer from SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from acceptance_cli import Cli

TYPES = """
task_types:
  sh: {handler: "shell:echo {name}"}
  py: {handler: "python:acc_handlers:add"}
"""


def _graph(cli: Cli, name: str, tasks: dict[str, object]) -> str:
    path = cli.cwd / name
    path.write_text(json.dumps({"tasks": tasks}))
    return str(path)


def _file(cli: Cli, name: str, args: dict[str, object]) -> str:
    """``@FILE`` for args too large for a command line."""
    (cli.cwd / name).write_text(json.dumps(args))
    return f"@{name}"


def _deep(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


def test_bad_input_is_one_line_and_writes_nothing(cli: Cli) -> None:
    (cli.cwd / "types.yaml").write_text(TYPES)
    cli("apply", str(cli.cwd / "types.yaml"), "--no-verify").ok()
    chain = {f"t{i}": {"type": "sh", "args": {"name": "x"}, "requires": [f"t{(i + 1) % 10000}"]}
             for i in range(10000)}
    cases: list[tuple[list[str], int, str]] = [
        (["submit", "sh", "--priority", "9223372036854775808", "--args", '{"name": 1}'], 2,
         "-1000000000<=x<=1000000000"),
        (["job", "show", "1180591620717411303424"], 2, "1<=x<=9223372036854775807"),
        (["graph", "show", "1180591620717411303424"], 2, "1<=x<=9223372036854775807"),
        (["graph", "submit", _graph(cli, "reruns.json", {"a": {"type": "sh", "reruns": 10**30,
                                                                "args": {"name": "x"}}})], 1,
         "task 'a': reruns must be a whole number from 0 to 1000000"),
        (["submit", "py", "--args", _deep(10_000)], 1, "args nest more than 64 levels deep"),
        (["submit", "py", "--args", _deep(100)], 1, "args nest more than 64 levels deep"),
        (["graph", "submit", _graph(cli, "nul.json", {"a\x00b": {"type": "sh"}})], 1,
         "task 'a\\x00b': a label is 1-200 characters without dots or control characters"),
        (["graph", "submit", _graph(cli, "type.json", {"a": {"type": "s\x00h"}})], 1,
         "task 'a': type 's\\x00h' holds a NUL character"),
        (["graph", "submit", _graph(cli, "long-label.json", {"x" * 1_000_000: {"type": "sh"}})], 1,
         "(1000000 characters): a label is 1-200 characters"),
        (["graph", "submit", _graph(cli, "cycle.json", chain)], 1,
         "graph: cycle of 10000 tasks, "),
        (["submit", "py", "--args", '{"s": "a\\u0000b"}'], 1,
         "job of type 'py': args holds a NUL character (at character 1)"),
        (["submit", "py", "--args", '{"s": "\\ud800"}'], 1, "lone surrogates"),
        (["submit", "sh"], 1, "job of type 'sh': shell handler: the job's args have no 'name'"),
        (["submit", "sh", "--args", _file(cli, "big.json", {"name": "x" * 200_000})], 1,
         "a shell handler gets them in $TASKYARD_ARGS, at most 130048 bytes"),
        (["submit", "sh", "--args", "@missing.json"], 2, "cannot read 'missing.json'"),
    ]
    results = cli.many([args for args, _, _ in cases])
    for (args, code, expected), result in zip(cases, results, strict=True):
        line = result.one_line_error(code)
        assert expected in line, (args[:3], line)
        assert len(line) < 400, (args[:3], len(line))
    assert cli("jobs", "list", "--json").json() == []
    assert cli("graph", "list", "--json").json() == []


def test_args_come_from_a_file_or_stdin_and_big_args_suit_python_handlers(cli: Cli) -> None:
    (cli.cwd / "types.yaml").write_text(TYPES)
    cli("apply", str(cli.cwd / "types.yaml"), "--no-verify").ok()
    (cli.cwd / "args.json").write_text('{"name": "from a file"}')
    from_file = int(cli("submit", "sh", "--args", "@args.json").ok().out)
    proc = subprocess.run(cli.argv(["submit", "sh", "--args", "-"]), cwd=cli.cwd, env=cli.env,
                          input='{"name": "from stdin"}', capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    from_stdin = int(proc.stdout)
    # 200 kB of args: too large for a shell handler's environment, fine for Python.
    big_args = _file(cli, "big.json", {"a": "x" * 200_000, "b": 1})
    big = int(cli("submit", "py", "--args", big_args).ok().out)
    shown = {j["id"]: j["args"] for j in cli("jobs", "list", "--json").json()}
    assert shown[from_file] == {"name": "from a file"}
    assert shown[from_stdin] == {"name": "from stdin"}
    assert len(shown[big]["a"]) == 200_000


def test_a_worker_name_or_pool_that_is_not_a_name_is_refused(cli: Cli, tmp_path: Path) -> None:
    too_long = cli("worker", "--name", "w" * 201, "--pool", "default")
    assert "longer than 200 characters" in too_long.one_line_error(1)
    bad_pool = cli("worker", "--name", "w1", "--pool", "gp\tu")
    assert "pool name 'gp\\tu' holds the character U+0009" in bad_pool.one_line_error(1)
