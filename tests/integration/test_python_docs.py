"""docs/python.md runs as written: its Python blocks are the files of examples/python,
its walkthrough prints what the page shows on a fresh SQLite database, the
transactional example works on PostgreSQL, and its test file passes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "python.md"
EXAMPLE = ROOT / "examples" / "python"
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(DOC.read_text())]


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKYARD_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["TASKYARD_DB"] = url
    return env


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "examples" / "python"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("*.db*", "*.log",
                                                                    "__pycache__"))
    return folder


def test_the_python_blocks_are_the_example_files() -> None:
    named = [(body.split("\n", 1)) for lang, body in _blocks() if lang == "python"]
    assert {head for head, _ in named} == {
        f"# examples/python/{name}" for name in ("shop.py", "submit.py", "orders.py",
                                                 "test_shop.py")}
    for head, body in named:
        assert (ROOT / head.removeprefix("# ")).read_text() == body, head


def test_the_walkthrough_prints_what_the_page_shows(tmp_path: Path) -> None:
    blocks = _blocks()
    at = next(i for i, (lang, body) in enumerate(blocks)
              if lang == "sh" and "python submit.py" in body)
    script, shown = blocks[at][1], blocks[at + 1][1]
    _copy(tmp_path)
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=_env("sqlite:///taskyard.db"),
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(shown), done.stdout


def test_the_transactional_example_runs_on_postgresql(db_url: str, tmp_path: Path) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("transactional submit is PostgreSQL's (SQLite refuses it, tested in "
                    "tests/store/test_transactional_submit.py)")
    folder = _copy(tmp_path)
    env = _env(db_url)
    up = subprocess.Popen([sys.executable, "-m", "taskyard", "up", "--workers", "1"],
                          cwd=folder, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        done = subprocess.run([sys.executable, "orders.py"], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
    finally:
        up.terminate()
        up.wait(60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "rolled back: None\ncommitted: receipt for ada: 30\n"


def test_the_pages_test_file_passes(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "test_shop.py"], cwd=folder,
                          env=_env("sqlite:///unused.db"), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
