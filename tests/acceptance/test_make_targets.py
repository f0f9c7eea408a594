"""The checkout's make targets install what each needs (issue 41): `make demo` and
`make ui` the runtime only, `make test` the dev tools on top, in one venv whichever runs
first. Checked with `make -n` (what make would run), so nothing is installed here."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str, venv: Path) -> list[str]:
    """The commands ``make TARGET`` would run with ``VENV=venv``."""
    done = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
                          check=True, capture_output=True, text=True, timeout=60)
    return [line for line in done.stdout.splitlines() if line.strip()]


def installs(commands: list[str]) -> list[str]:
    return [c for c in commands if " -m venv " in c or "pip install" in c]


def stamp(path: Path, after: Path) -> None:
    """Create ``path`` newer than ``after`` (as a finished recipe leaves it)."""
    path.touch()
    later = after.stat().st_mtime + 10
    os.utime(path, (later, later))


def test_demo_and_ui_install_the_runtime_only(tmp_path: Path) -> None:
    for target in ("demo", "ui"):
        steps = installs(planned(target, tmp_path / "v"))
        assert steps == [f"python3 -m venv {tmp_path / 'v'}",
                         f"{tmp_path / 'v'}/bin/pip install -q --upgrade pip",
                         f"{tmp_path / 'v'}/bin/pip install -q -e ."], steps
        assert not any("[dev]" in s for s in steps)


def test_test_on_a_fresh_checkout_creates_the_venv_then_adds_the_dev_tools(
        tmp_path: Path) -> None:
    steps = installs(planned("test", tmp_path / "v"))
    assert steps[0] == f"python3 -m venv {tmp_path / 'v'}"
    assert steps[-1] == f"{tmp_path / 'v'}/bin/pip install -q -e '.[dev]'"


def test_test_after_demo_only_adds_the_dev_tools(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    venv.mkdir()
    stamp(venv / ".runtime", ROOT / "pyproject.toml")  # `make demo` ran
    assert installs(planned("test", venv)) == [f"{venv}/bin/pip install -q -e '.[dev]'"]
    stamp(venv / ".installed", venv / ".runtime")     # then `make test`
    assert installs(planned("demo", venv)) == []        # demo again: nothing to install
    assert installs(planned("test", venv)) == []


def test_a_changed_pyproject_reinstalls_both(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    venv.mkdir()
    # Older than pyproject.toml, whenever the checkout was made.
    old = (ROOT / "pyproject.toml").stat().st_mtime - 3600
    for name in (".runtime", ".installed"):
        (venv / name).touch()
        os.utime(venv / name, (old, old))  # older than pyproject.toml
    steps = installs(planned("test", venv))
    assert steps[-2:] == [f"{venv}/bin/pip install -q -e .",
                          f"{venv}/bin/pip install -q -e '.[dev]'"]


def test_the_license_is_an_spdx_expression() -> None:
    # A TOML table made setuptools print its deprecation banner (twice per install).
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]  # PEP 639 strings
