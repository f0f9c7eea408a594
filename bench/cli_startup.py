"""CLI start-up time: the real ``taskyard`` command, run N times per case (hyperfine's
way: a few warm-up runs, then the median, min and max of wall-clock times).

    python -m bench.cli_startup [--runs 20] [--taskyard COMMAND] [--json]

``--taskyard`` is the command to time (default: ``taskyard`` on PATH, else the one beside
this Python), e.g. ``--taskyard "python -m taskyard"`` with ``PYTHONPATH`` set to time
another checkout's code.

Cases: ``--version``, ``--help``, ``submit`` on SQLite (a fresh database in a temp
folder, one task type), ``job show`` on SQLite. Targets (issue 20): ``--version``
≤ 0.2 s, SQLite ``submit`` ≤ 0.35 s. ``python -X importtime -m taskyard …`` shows
where the time of one run goes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"--version": 0.2, "submit": 0.35}


def _time(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(taskyard: list[str], runs: int, warmup: int = 3) -> dict[str, dict[str, float]]:
    """Seconds per case: median, min, max over ``runs`` runs."""
    with tempfile.TemporaryDirectory(prefix="ty-startup-") as folder:
        # As users run it: compiled modules cached (PYTHONDONTWRITEBYTECODE would make
        # every run compile taskyard's ~80 modules again, about 0.1 s).
        env = {k: v for k, v in os.environ.items()
               if k not in ("TASKYARD_DB", "PYTHONDONTWRITEBYTECODE")}
        setup = [["init"], ["task-type", "add", "hello", "--handler", "shell:echo {name}"]]
        for args in setup:
            subprocess.run([*taskyard, *args], cwd=folder, env=env, check=True,
                           stdout=subprocess.DEVNULL)
        cases = {
            "--version": [*taskyard, "--version"],
            "--help": [*taskyard, "--help"],
            "submit": [*taskyard, "submit", "hello", "--args", '{"name": "x"}'],
            "job show": [*taskyard, "job", "show", "1"],
        }
        results = {}
        for name, argv in cases.items():
            for _ in range(warmup):
                _time(argv, folder, env)
            times = [_time(argv, folder, env) for _ in range(runs)]
            results[name] = {"median": statistics.median(times), "min": min(times),
                             "max": max(times)}
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--taskyard", default=shutil.which("taskyard")
                        or str(Path(sys.executable).with_name("taskyard")))
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    command = shlex.split(opts.taskyard)
    command[0] = shutil.which(command[0]) or str(Path(command[0]).resolve())
    results = measure(command, opts.runs)
    if opts.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'case':<12} {'median':>8} {'min':>8} {'max':>8}  target   ({opts.runs} runs, "
          f"load {os.getloadavg()[0]:.1f})")
    for name, r in results.items():
        target = TARGETS.get(name)
        mark = "" if target is None else f"≤ {target:.2f}s " + (
            "ok" if r["median"] <= target else "MISSED")
        print(f"{name:<12} {r['median']:>7.3f}s {r['min']:>7.3f}s {r['max']:>7.3f}s  {mark}")


if __name__ == "__main__":
    main()
