"""Fixtures of the acceptance tests: the ``taskyard`` command on a fresh database of each
store, run in a folder that holds the handlers module."""

from __future__ import annotations

from pathlib import Path

import pytest
from acceptance_cli import HANDLERS, Cli


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    (tmp_path / "acc_handlers.py").write_text(HANDLERS)
    return Cli(db_url, tmp_path)
