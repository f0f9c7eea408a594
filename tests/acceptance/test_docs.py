"""Every shell block in ``README.md`` and ``docs/`` runs as shown (issue 20).

Each page runs as one bash script (``set -eo pipefail``), its blocks in order, in a fresh
temp folder on a fresh SQLite database, with the ``taskyard`` of this checkout on PATH:
as a reader who types the page into one shell. README and the tutorial start from an
empty folder, as they say (README's with the ``.venv`` that ``make demo`` leaves); every
other page finds the database created (``taskyard init``) and a copy of ``examples/``
in its folder, as in a checkout. Each page has a network of its own where the system allows
it (a network namespace with its loopback only): a page serves on 127.0.0.1:8080 as it
shows, whatever else runs on the machine. A block is left out
only behind ``<!-- docs-test: skip, REASON -->``; see ``docs_blocks.py`` for the other
markers (a file to write, an output to check).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import missing_output, script

ROOT = Path(__file__).resolve().parents[2]
FROM_NOTHING = {"README.md", "docs/tutorial.md"}
PAGES = [str(p.relative_to(ROOT)) for p in
         [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
         if script(p.read_text())[1]]
PAGE_TIMEOUT = 1200.0
"""Seconds a page may take on a loaded machine (the slowest sleeps about a minute)."""


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKYARD_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    return env


@functools.cache
def _own_network() -> list[str]:
    """The command prefix that runs a page in a network namespace of its own (loopback
    only), or none where the system does not allow one."""
    prefix = ["unshare", "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    try:
        probe = subprocess.run([*prefix, "ip", "link", "set", "lo", "up"],
                               check=False, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if probe.returncode != 0:
        return []
    return [*prefix, "bash", "-c", 'ip link set lo up && exec bash "$0"']


def _prepare(page: str, folder: Path, env: dict[str, str]) -> None:
    if page == "README.md":  # read in the checkout after `make demo`: its .venv is there
        (folder / ".venv").symlink_to(sys.prefix)
    if page in FROM_NOTHING:
        return
    shutil.copytree(ROOT / "examples", folder / "examples",
                    ignore=shutil.ignore_patterns("run", "*.db*", "__pycache__"))
    subprocess.run(["taskyard", "init"], cwd=folder, env=env, check=True,
                   capture_output=True, timeout=120)


@pytest.mark.timeout(PAGE_TIMEOUT + 120)
@pytest.mark.parametrize("page", PAGES)
def test_every_shell_block_runs_as_shown(page: str, tmp_path: Path) -> None:
    body, runnable = script((ROOT / page).read_text())
    folder = tmp_path / "work"
    folder.mkdir()
    env = _environment(tmp_path)
    _prepare(page, folder, env)
    (tmp_path / "page.sh").write_text(body)
    proc = subprocess.Popen([*(_own_network() or ["bash"]), str(tmp_path / "page.sh")],
                            cwd=folder, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{page} did not finish in {PAGE_TIMEOUT:.0f}s:\n{err[-4000:]}")
    finally:
        # Whatever the page left behind in its session (it stops its own daemons).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, f"{page}:\n--- stdout ---\n{out[-3000:]}\n--- stderr ---\n" \
                                 f"{err[-5000:]}"
    printed = out.split("@@docs-test block ")
    for index, block in enumerate(runnable):
        if block.expected:
            shown = printed[index + 1] if index + 1 < len(printed) else ""
            missing = missing_output(block.expected, shown)
            assert not missing, (f"{page}, block at line {block.line}: not printed: "
                                 f"{missing}\n--- printed ---\n{shown}")


SAMPLE = """
<!-- docs-test: file g.yaml -->
```yaml
tasks: {a: {type: t}}
```
```sh
taskyard up --workers 2          # shell 1
taskyard worker --name w1 > w1.log 2>&1 & W1=$!
taskyard up --until-idle
```
<!-- docs-test: output -->
```
why:  no live worker ...
```
<!-- docs-test: skip, needs PostgreSQL -->
```sh
taskyard init
```
```console
$ taskyard jobs list
ID  TYPE
```
"""


def test_the_page_script_follows_the_markers() -> None:
    body, runnable = script(SAMPLE)
    assert [b.lang for b in runnable] == ["sh", "console"]
    assert "cat > g.yaml <<'DOCS_TEST_EOF'\ntasks: {a: {type: t}}\nDOCS_TEST_EOF" in body
    assert "taskyard up --workers 2 2>> docs-test-up.log &" in body  # "shell 1"
    assert "> w1.log 2>&1 & W1=$!\n" in body  # already in the background: as written
    assert "taskyard up --until-idle\n" in body and "taskyard init" not in body
    assert "\ntaskyard jobs list\n" in body and "ID  TYPE" not in body
    assert runnable[0].expected == ["why:  no live worker ..."]
    assert missing_output(runnable[0].expected, "x\nwhy: no live worker serves gpu\n") == []
    assert missing_output(["why: lock x"], "why: no live worker\n") == ["why: lock x"]


def test_servers_and_followers_run_beside_the_page() -> None:
    body, _ = script("""
```sh
taskyard serve                          # the API
taskyard up --workers 2 --http 8081
taskyard serve --port 8082 &
taskyard events --follow --json
curl -sSN -H "Authorization: Bearer $TOKEN" "$TASKYARD/api/v1/events/stream?tail=2"
taskyard events --tail 5
```
""")
    assert "taskyard serve 2>> docs-test-serve.log &\ndocs_test_wait_http 8080 $!\n" in body
    assert "--http 8081 2>> docs-test-up.log &\ndocs_test_wait_http 8081 $!\n" in body
    assert "taskyard serve --port 8082 &\ntaskyard events" in body  # as written
    assert "--follow --json 2>> docs-test-events-follow.log &\n" in body
    assert "?tail=2\" 2>> docs-test-events-follow.log &\n" in body
    assert "taskyard events --tail 5\n" in body
