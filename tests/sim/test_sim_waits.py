"""Approvals, waits and sleeps in the simulator: they await without a worker slot, end
at their drawn decision, their signal, their duration or their timeout; failure edges
follow a denial; the report says how many slots polling handlers would have held."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_runs import events, jobs, run

from taskyard.sim import ScenarioError, parse_scenario

GRAPH = """
tasks:
  build: {type: build}
  approve: {approval: {timeout: 1h}, requires: [build]}
  ready: {wait: {signal: artifact-ready}, requires: [build]}
  settle: {sleep: 10m, requires: [build]}
  deploy: {type: deploy, requires: [approve, ready, settle]}
  rollback: {type: deploy, requires: [{label: approve, on: failure}]}
"""


def _doc(tmp_path: Path, **waits: object) -> dict[str, object]:
    (tmp_path / "release.yaml").write_text(GRAPH)
    return {
        "seed": 5, "until": "12h",
        "workers": {"w": {"count": 1, "capacity": 2}},
        "task_types": {"build": {"duration": "5m"}, "deploy": {"duration": "2m"}},
        "arrivals": [{"graph": "release.yaml", "poisson": "4/h"}],
        "waits": waits or {"approve": {"after": {"exponential": "20m"}, "deny": 0.2},
                           "artifact-ready": {"after": "3m"}},
    }


def test_waits_await_without_a_slot_and_end_as_drawn(tmp_path: Path) -> None:
    result = run(_doc(tmp_path), base=tmp_path)
    found = jobs(result)
    waits = [j for j in found.values() if j.type.name.startswith("(")]
    assert waits and all(j.started is None and j.worker is None for j in waits)
    assert all(j.finished is not None for j in found.values())  # every job ended
    settle = [j for j in waits if j.type.name == "(sleep)"]
    assert all(j.finished is not None and j.ready is not None
               and j.finished - j.ready == pytest.approx(600) for j in settle)
    ready = [j for j in waits if j.type.name == "(wait)"]
    assert all(j.finished - j.ready == pytest.approx(180) for j in ready)  # type: ignore[operator]
    approvals = [j for j in waits if j.type.name == "(approval)"]
    failed = [j for j in approvals if j.state == "failed"]
    assert 0 < len(failed) < len(approvals)  # denials and timeouts (exponential 20m > 1h)
    assert all(j.finished - j.ready <= 3600 + 1e-6 for j in approvals)  # type: ignore[operator]
    rollbacks = {j.graph.id for j in found.values() if j.label == "rollback"  # type: ignore[union-attr]
                 and j.state == "succeeded"}
    assert rollbacks == {j.graph.id for j in failed}  # type: ignore[union-attr]
    assert len(events(result, "await")) == len(waits)
    awaiting = result.report["awaiting"]
    assert awaiting["jobs"] == len(waits)
    assert set(awaiting["by_kind"]) == {"approval", "sleep", "wait"}
    assert awaiting["slots_mean"] == pytest.approx(
        awaiting["seconds"] / result.report["simulated_seconds"], rel=1e-3)
    assert 1 <= awaiting["slots_max"] <= len(waits)
    again = run(_doc(tmp_path), base=tmp_path)
    assert again.report["awaiting"] == awaiting  # one seed, one run


def test_an_approval_nothing_decides_is_refused(tmp_path: Path) -> None:
    doc = _doc(tmp_path, **{"artifact-ready": {"after": "3m"}})
    with pytest.raises(ScenarioError, match=r"arrivals\[0\]\.graph: task 'approve' is "
                                            "approval that nothing decides: give "
                                            "waits.approve, waits.approval"):
        parse_scenario(doc, base=tmp_path)


@pytest.mark.parametrize(("waits", "message"), [
    ({"approval": {"deny": 0.1}}, "waits.approval.after: required"),
    ({"approval": {"after": "1m", "when": 1}}, "waits.approval: unknown field 'when'"),
    ({"approval": {"after": "1m", "deny": 2}}, "waits.approval.deny"),
    ({"approval": "1m"}, "waits.approval: must be a mapping"),
])
def test_bad_waits_sections_name_the_field(tmp_path: Path, waits: dict[str, object],
                                           message: str) -> None:
    doc = _doc(tmp_path)
    doc["waits"] = waits
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(doc, base=tmp_path)
