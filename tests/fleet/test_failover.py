"""Losing the database primary with nothing lost (tests/fleet/failover.py): a synchronous
standby promoted after a SIGKILL of the primary, in the middle of a stream of submits
and completions, the daemons on a URL of both hosts."""

from __future__ import annotations

from tests.fleet import failover
from tests.fleet.servers import remove, scratch


def test_a_killed_primary_loses_no_accepted_job_and_runs_no_attempt_twice() -> None:
    folder = scratch("taskyard-failover-")
    try:
        figures = failover.run(folder, jobs=300)
    finally:
        remove(folder)
    print("failover:", figures)
    assert figures["accepted"] > 250  # only submits made while no primary was up failed
    assert figures["lost"] == 0
    assert figures["not_succeeded"] == 0
    assert figures["succeeded_twice"] == 0
    assert figures["attempt_ran_twice"] == 0
    assert figures["daemons_alive_throughout"], figures
    assert figures["fenced"] == 0, figures
    assert figures["exit_codes"] == [0]
    assert figures["kill_to_first_placement_s"] < 15  # within the workers' lease
