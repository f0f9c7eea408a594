"""What the daemons log (issue 20): one line per job start and end from -v on, nothing
of the libraries below -vvv, and an ordinary cancel that reads as one."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable

from acceptance_cli import Cli


def test_jobs_are_logged_from_v_on_and_libraries_stay_quiet(cli: Cli) -> None:
    cli("task-type", "add", "hi", "--handler", "shell:echo hi").ok()
    first = cli("submit", "hi").ok().out.strip()
    quiet = cli("up", "--workers", "1", "--until-idle", timeout=240).ok()
    assert "event=scheduler-started" in quiet.err  # the daemons' own lines: always
    assert "event=job-" not in quiet.err
    second = cli("submit", "hi").ok().out.strip()
    verbose = cli("-v", "up", "--workers", "1", "--until-idle", timeout=240).ok()
    assert f"event=job-started job={second} attempt=1 type=hi" in verbose.err
    assert f"event=job-ended job={second} attempt=1 type=hi state=succeeded" in verbose.err
    assert f"job={first} " not in verbose.err
    for result in (quiet, verbose, cli("-v", "init").ok(), cli("-vv", "init").ok()):
        assert "alembic" not in result.err and "sqlalchemy" not in result.err, result.err


def test_a_canceled_job_is_logged_as_stopped_not_refused(cli: Cli) -> None:
    cli("task-type", "add", "slow", "--handler", "shell:sleep 60").ok()
    job_id = cli("submit", "slow").ok().out.strip()
    log = cli.cwd / "up.log"
    with log.open("w") as err:
        up = subprocess.Popen(cli.argv(["-v", "up", "--workers", "1"]), cwd=cli.cwd,
                              env=cli.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=err)
    try:
        _wait_for(lambda: f"event=job-started job={job_id} " in log.read_text(), up)
        assert cli("job", "cancel", job_id).ok().out == f"job {job_id} canceled\n"
        # The worker stops the handler, reports, and its report is refused: expected.
        _wait_for(lambda: f"event=job-stopped job={job_id} attempt=1" in log.read_text(), up)
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(120)
    assert "completion-refused" not in log.read_text()


def _wait_for(seen: Callable[[], bool], up: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not seen():
        assert time.monotonic() < deadline and up.poll() is None, "not seen in time"
        time.sleep(0.2)
