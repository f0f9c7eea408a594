"""examples/stages runs as docs/failures.md says: each job fails once on purpose, and
its retry resumes after the stages the first attempt finished (Python and shell)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import Cluster

EXAMPLE = Path(__file__).parents[2] / "examples" / "stages"


def test_the_stages_example_resumes_after_a_failure(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLE)  # workers import etl.py and run ship.sh from here
    y = cluster.yard
    y.apply(yaml.safe_load((EXAMPLE / "taskyard.yaml").read_text()), verify=False)
    cluster.add_scheduler()
    cluster.add_worker("w1")
    etl = y.wait(y.submit("etl", {"rows": 4}), 30)
    ship = y.wait(y.submit("ship", {"name": "app"}), 30)

    assert etl.state == "succeeded", (etl.error, etl.attempts[-1].stderr_tail)
    assert etl.result == {"total": 30, "stored": 30, "attempt": 2,
                          "resumed_after": ["extract", "transform"]}
    assert [(s.attempt, s.name, s.state, s.result) for s in etl.stages] == [
        (1, "extract", "succeeded", [1, 4, 9, 16]),
        (1, "transform", "succeeded", 30),
        (1, "load", "failed",
         "ConnectionError: warehouse unreachable (attempt 1 fails on purpose)"),
        (2, "load", "succeeded", {"stored": 30}),
    ]
    assert [a.state for a in etl.attempts] == ["failed", "succeeded"]
    assert "extract" not in (etl.attempts[1].stdout_tail or "")  # not run again

    assert ship.state == "succeeded", (ship.error, ship.attempts[-1].stderr_tail)
    assert ship.result == {"shipped": "app",
                           "earlier_stages": {"build": {"artifact": "app.tar.gz"}}}
    assert [(s.attempt, s.name, s.state, s.result) for s in ship.stages] == [
        (1, "build", "succeeded", {"artifact": "app.tar.gz"}),
        (1, "upload", "failed", "network down"),
        (2, "upload", "succeeded", "sent"),
    ]
    assert [(a.state, a.exit_code) for a in ship.attempts] == [("failed", 3), ("succeeded", 0)]
    assert "skipped" in (ship.attempts[1].stdout_tail or "")
