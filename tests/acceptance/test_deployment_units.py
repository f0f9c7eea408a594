"""The systemd units of docs/operations/deployment.md are valid as written: systemd
accepts them (``systemd-analyze verify``, where installed) and each ``ExecStart`` /
``ExecStartPre`` is a ``taskyard`` command line whose options exist."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import blocks

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operations" / "deployment.md"
INSTALLED = "/opt/taskyard/bin/taskyard"
FILES = {b.marker[1]: b.text for b in blocks(PAGE.read_text())
         if b.marker is not None and b.marker[0] == "file"}
UNITS = sorted(name for name in FILES if name.endswith(".service"))


def test_the_page_has_the_three_services() -> None:
    assert UNITS == ["taskyard-scheduler.service", "taskyard-serve.service",
                     "taskyard-worker@.service"]
    assert "TASKYARD_DB=" in FILES["taskyard.env"]


def _commands(unit: str) -> list[list[str]]:
    found = []
    for line in FILES[unit].splitlines():
        key, _, value = line.partition("=")
        if key in ("ExecStart", "ExecStartPre"):
            argv = shlex.split(value.replace("%H", "host").replace("%i", "1"))
            assert argv[0] == INSTALLED, line
            found.append(argv[1:])
    assert found, unit
    return found


@pytest.mark.parametrize("unit", UNITS)
def test_each_command_is_a_valid_taskyard_invocation(unit: str, tmp_path: Path) -> None:
    """Its options parse (``--help`` after them: nothing runs, an unknown option or a
    bad value fails with exit code 2)."""
    for args in _commands(unit):
        done = subprocess.run([sys.executable, "-m", "taskyard", *args, "--help"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              check=False)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout.startswith("Usage: taskyard"), done.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed")
@pytest.mark.parametrize("unit", UNITS)
def test_systemd_accepts_the_unit(unit: str, tmp_path: Path) -> None:
    taskyard = Path(sys.executable).parent / "taskyard"
    env = tmp_path / "taskyard.env"
    env.write_text(FILES["taskyard.env"])
    text = FILES[unit].replace(INSTALLED, str(taskyard)).replace(
        "/etc/taskyard/taskyard.env", str(env)).replace("User=taskyard", "User=root").replace(
        "Group=taskyard", "Group=root").replace("/srv/taskyard", str(tmp_path))
    path = tmp_path / unit
    path.write_text(text)
    instance = path.with_name(unit.replace("@.", "@1.")) if "@." in unit else path
    done = subprocess.run(["systemd-analyze", "verify", str(instance)], capture_output=True,
                          text=True, timeout=120, check=False)
    said = [line for line in (done.stdout + done.stderr).splitlines() if str(tmp_path) in line]
    assert done.returncode == 0 and said == [], done.stdout + done.stderr
