"""bench/daemon_stop.py stops each daemon with SIGTERM and reports a time for each (the
times themselves are the bench's, not asserted here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.daemon_stop import ROLES, main


def test_every_daemon_is_stopped_and_timed(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", f"sqlite:///{tmp_path / 'stop.db'}", "--rounds", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result) == list(ROLES)
    assert all(0 < row["min"] <= row["median"] <= row["max"] for row in result.values())
