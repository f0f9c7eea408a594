"""The chaos checks catch what they claim to: each one is fed a fabricated violation
(and its innocent twin, so that a check that always complains fails too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import chaos_checks as c

PID, OTHER = 101, 202


def _procs(**changes: Any) -> dict[int, c.WorkerProc]:
    procs = {PID: c.WorkerProc("w1", PID, 2, 0.0), OTHER: c.WorkerProc("w2", OTHER, 2, 0.0)}
    for field, value in changes.items():
        setattr(procs[PID], field, value)
    return procs


def _ex(job: int, start: float, end: float | None, *, attempt: int = 1, wpid: int = PID,
        lock: str | None = None, ok: bool | None = True) -> c.Execution:
    return c.Execution(job, attempt, "w1" if wpid == PID else "w2", wpid, start, end,
                       ok if end is not None else None, lock)


def _attempt(job: int, number: int, state: str, worker_id: int = 1,
             **times: float) -> c.AttemptRow:
    return c.AttemptRow(job, number, state, worker_id, "w1" if worker_id == 1 else "w2",
                        times.get("dispatched"), times.get("started"), times.get("finished"))


def test_parse_log_flags_torn_lines_and_double_starts(tmp_path: Path) -> None:
    log = tmp_path / "log"
    rec = {"ev": "start", "job": 1, "att": 1, "w": "w1", "wpid": PID, "ppid": PID, "t": 1.0}
    log.write_text("\n".join([
        json.dumps(rec), json.dumps({**rec, "ev": "end", "t": 2.0, "ok": True}),
        json.dumps({**rec, "job": 2}), json.dumps({**rec, "job": 2}),
        json.dumps({**rec, "job": 3, "ev": "end", "ok": True}),
        '{"ev": "start", "job": 4, "at',
        json.dumps({**rec, "job": 5, "ppid": 1}),
    ]) + "\n")
    executions, problems = c.parse_log(log)
    assert [(e.job, e.end, e.orphan) for e in executions] == [
        (1, 2.0, False), (2, None, False), (5, None, True)]
    assert len(problems) == 3
    assert "job 2 attempt 1 started twice" in problems
    assert "job 3 attempt 1 ended without a start" in problems
    assert any("not a whole record" in p for p in problems)


def test_settle_ends_flags_a_handler_that_outlived_its_worker() -> None:
    procs = _procs(killed=10.0, reaped=10.01, cleared=10.02)
    early, cut, late = _ex(1, 9.0, 9.5), _ex(2, 9.0, None), _ex(3, 9.8, 10.03)
    verdict = c.Verdict()
    c.settle_ends([early, cut, late], procs, {}, verdict)
    assert (cut.end, cut.end_basis) == (10.02, "killed")
    assert len(verdict.violations) == 1 and "job 3 attempt 1 outlived" in verdict.violations[0]


def test_settle_ends_needs_an_end_from_somewhere() -> None:
    stopped, unknown = _ex(1, 1.0, None), _ex(2, 1.0, None)
    verdict = c.Verdict()
    rows = {(1, 1): _attempt(1, 1, "lost", finished=4.0), (2, 1): _attempt(2, 1, "running")}
    c.settle_ends([stopped, unknown], _procs(), rows, verdict)
    assert (stopped.end, stopped.end_basis) == (4.0, "db")
    assert len(verdict.violations) == 1 and "job 2 attempt 1" in verdict.violations[0]


def test_attribute_gives_an_orphan_to_its_killed_worker_only() -> None:
    rows = {(1, 1): _attempt(1, 1, "lost"), (2, 1): _attempt(2, 1, "lost", worker_id=2)}
    orphan, stray = _ex(1, 5.0, None, wpid=1), _ex(2, 5.0, None, wpid=1)
    verdict = c.Verdict()
    c.attribute([orphan, stray], _procs(killed=4.9, reaped=5.0, cleared=5.0), rows,
                {1: PID, 2: OTHER},
                verdict)
    assert (orphan.wpid, orphan.orphan) == (PID, True)
    assert len(verdict.violations) == 1 and "job 2 attempt 1 ran in pid 1" in verdict.violations[0]


def test_capacity_counts_overlaps_per_worker_process() -> None:
    fine = [_ex(1, 0, 2), _ex(2, 1, 3), _ex(3, 2, 4), _ex(4, 0, 5, wpid=OTHER)]
    verdict = c.Verdict()
    c.check_capacity(fine, _procs(), verdict)
    assert verdict.violations == [] and verdict.figures["max_concurrent_per_worker"] == 2
    c.check_capacity([*fine, _ex(5, 1.5, 1.6)], _procs(), verdict)
    assert len(verdict.violations) == 1 and "ran 3 handlers at once" in verdict.violations[0]


def test_locks_never_overlap() -> None:
    verdict = c.Verdict()
    c.check_locks([_ex(1, 0, 1, lock="res:1"), _ex(2, 1, 2, lock="res:1", wpid=OTHER),
                   _ex(3, 0.5, 1.5, lock="res:2")], verdict)
    assert verdict.violations == []
    # A long holder, then a short one inside it, then one that starts before it ends.
    c.check_locks([_ex(1, 0, 10, lock="res:1"), _ex(2, 1, 2, lock="res:1"),
                   _ex(3, 5, 11, lock="res:1", wpid=OTHER)], verdict)
    assert len(verdict.violations) == 2
    assert all("lock res:1" in v for v in verdict.violations)


def test_check_jobs_catches_loss_wrong_states_and_stale_completions() -> None:
    want = c.Expectation("succeeded")
    submitted = {1: want, 2: want, 3: want, 4: want, 5: c.Expectation("succeeded", "first"),
                 6: want, 7: want}
    jobs = {
        1: c.JobRow(1, "quick", "succeeded", 2, {"attempt": 2}, None, None),  # fine
        2: c.JobRow(2, "quick", "succeeded", 2, {"attempt": 1}, None, None),  # stale result
        3: c.JobRow(3, "quick", "failed", 1, None, None, None),  # not designed to fail
        5: c.JobRow(5, "flaky", "succeeded", 2, {"attempt": 2}, None, None),  # fine
        6: c.JobRow(6, "quick", "succeeded", 2, {"attempt": 2}, None, None),  # won twice
        7: c.JobRow(7, "quick", "succeeded", 1, {"attempt": 1}, None, None),  # two events
        8: c.JobRow(8, "quick", "succeeded", 1, {"attempt": 1}, None, None),  # not submitted
    }  # 4 is lost
    attempts = {
        1: [_attempt(1, 1, "lost"), _attempt(1, 2, "succeeded")],
        2: [_attempt(2, 1, "succeeded"), _attempt(2, 2, "succeeded")],
        3: [_attempt(3, 1, "failed")],
        5: [_attempt(5, 1, "failed"), _attempt(5, 2, "succeeded")],
        6: [_attempt(6, 1, "succeeded"), _attempt(6, 2, "succeeded")],
        7: [_attempt(7, 1, "succeeded")],
        8: [_attempt(8, 1, "succeeded")],
    }
    events = {1: 1, 2: 1, 5: 1, 6: 1, 7: 2, 8: 1}
    verdict = c.Verdict()
    c.check_jobs(submitted, jobs, attempts, events, verdict)
    text = "\n".join(verdict.violations)
    assert "1 submitted jobs are missing (lost): [4]" in text
    assert "1 jobs nobody submitted: [8]" in text
    assert "job 2: result {'attempt': 1} is not from its current attempt 2" in text
    assert "job 3 (quick ) ended failed, expected succeeded" in text
    assert "job 6: succeeded attempts [1, 2]" in text
    assert "job 7: 2 job-completed events" in text
    assert not any(line.startswith(("job 1 ", "job 1:", "job 5")) for line in
                   verdict.violations)
    assert verdict.figures["duplicate_completions_accepted"] == 3  # jobs 2, 6 and 7


def test_check_log_against_db_ties_executions_to_dispatched_attempts() -> None:
    rows = {(1, 1): _attempt(1, 1, "succeeded"), (2, 1): _attempt(2, 1, "succeeded"),
            (3, 1): _attempt(3, 1, "lost"), (3, 2): _attempt(3, 2, "succeeded")}
    jobs = {i: c.JobRow(i, "quick", "succeeded", 1, None, None, None) for i in (1, 2, 3)}
    executions = [_ex(1, 0, 1), _ex(2, 0, 1, wpid=OTHER), _ex(3, 0, None),
                  _ex(3, 2, 3, attempt=2), _ex(9, 0, 1)]
    executions[2].end, executions[2].end_basis = 0.5, "killed"
    verdict = c.Verdict()
    c.check_log_against_db(executions, jobs, rows, {1: PID, 2: OTHER}, verdict)
    text = "\n".join(verdict.violations)
    assert "job 2 attempt 1 ran on w2 (pid 202) but was dispatched to w1 (pid 101)" in text
    assert "job 9 attempt 1 ran on w1 but the database has no such attempt" in text
    assert len(verdict.violations) == 2
    assert verdict.figures["duplicate_executions"] == 1  # job 3


def test_recovery_runs_from_the_kill_to_the_next_started_attempt() -> None:
    procs = _procs(killed=10.0, reaped=10.01, cleared=10.02)
    rows = {(1, 1): _attempt(1, 1, "lost"), (1, 2): _attempt(1, 2, "lost", worker_id=2),
            (1, 3): _attempt(1, 3, "succeeded", worker_id=2, started=12.5)}
    assert c.recovery_times(procs, rows, {1: PID, 2: OTHER}) == [2.5]
    assert c.summarize_recovery([2.5, 1.0, 3.0])["recovery_p50_s"] == 2.5
