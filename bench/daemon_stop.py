"""How long each taskyard daemon takes to exit after SIGTERM, idle (after one job).

    python -m bench.daemon_stop --db URL [--rounds 5] [--json]

Each round starts ``taskyard scheduler``, ``taskyard worker`` and ``taskyard worker
--scheduler`` one after the other on a fresh database (a worker first runs one job, so
that its slots' children are up), sends SIGTERM and times until the process has exited.
Columns: the median, min and max over the rounds, in seconds. Every ``make bench`` cell
stops its daemons this way, and ``taskyard up`` or a service manager waits this long.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.throughput import fresh

HERE = Path(__file__).resolve().parent.parent
ROLES = {"scheduler": ["scheduler"], "worker": ["worker", "--name", "stop-w"],
         "worker --scheduler": ["worker", "--name", "stop-ws", "--scheduler"]}


def measure(url: str, rounds: int) -> dict[str, dict[str, float]]:
    """Seconds from SIGTERM to exit per daemon: median, min, max over ``rounds``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    times: dict[str, list[float]] = {role: [] for role in ROLES}
    for _ in range(rounds):
        yard = fresh(url)
        try:
            for role, args in ROLES.items():
                proc = subprocess.Popen([sys.executable, "-m", "taskyard", "--db", url, *args],
                                        env=env, cwd=HERE, stderr=subprocess.PIPE, text=True)
                try:
                    _wait_started(proc)
                    if role != "scheduler":
                        yard.wait(yard.submit("noop"), 60)
                    began = time.perf_counter()
                    proc.terminate()
                    proc.wait(60)
                    times[role].append(time.perf_counter() - began)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
        finally:
            yard.close()
    return {role: {"median": statistics.median(t), "min": min(t), "max": max(t)}
            for role, t in times.items()}


def _wait_started(proc: subprocess.Popen[str]) -> None:
    """Read the daemon's log until it says it started (its few later lines fit in the
    pipe's buffer)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if "event=scheduler-started" in line or "event=worker-started" in line:
            return
    raise RuntimeError(f"the daemon exited with {proc.wait()} before it started")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True, help="database URL (emptied each round)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.db, args.rounds)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{'daemon':<20} {'median s':>9} {'min':>7} {'max':>7}")
    for role, row in result.items():
        print(f"{role:<20} {row['median']:>9.3f} {row['min']:>7.3f} {row['max']:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
