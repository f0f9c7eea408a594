"""CLI start-up time: the real ``taskyard`` command, run N times per case (hyperfine's
way: a few warm-up runs, then the median, min and max of wall-clock times).

    python -m bench.cli_startup [--runs 20] [--taskyard COMMAND] [--against COMMAND] [--json]

``--taskyard`` is the command to time (default: ``taskyard`` on PATH, else the one beside
this Python), e.g. ``--taskyard "env PYTHONPATH=../other/src python -m taskyard"`` to time
another checkout's code. ``--against`` times a second command too, its runs alternating
with the first's (a before/after comparison that stays fair on a busy machine: both
see the same load).

Columns: the wall-clock median, min and max (the targets are on the median, on a quiet
machine) and the median CPU time (user + system), steadier on a shared one.

Cases: ``--version``, ``--help``, ``submit`` on SQLite (a fresh database in a temp
folder, one task type), ``job show`` on SQLite. Targets (issue 20): ``--version``
≤ 0.2 s, SQLite ``submit`` ≤ 0.35 s. ``python -X importtime -m taskyard …`` shows
where the time of one run goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"--version": 0.2, "submit": 0.35}


def _time(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock seconds of one run, and the CPU seconds (user + system) it used: on a
    shared machine the CPU time varies much less with the load than the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(commands: dict[str, list[str]], runs: int,
            warmup: int = 3) -> dict[str, dict[str, dict[str, float]]]:
    """Seconds per command and case: median, min, max over ``runs`` runs (wall clock), and
    the median CPU time. With several commands, their runs alternate (on one database)."""
    first = next(iter(commands.values()))
    with tempfile.TemporaryDirectory(prefix="ty-startup-") as folder:
        # As users run it: compiled modules cached (PYTHONDONTWRITEBYTECODE would make
        # every run compile taskyard's ~80 modules again, about 0.1 s).
        env = {k: v for k, v in os.environ.items()
               if k not in ("TASKYARD_DB", "PYTHONDONTWRITEBYTECODE")}
        setup = [["init"], ["task-type", "add", "hello", "--handler", "shell:echo {name}"]]
        for args in setup:
            subprocess.run([*first, *args], cwd=folder, env=env, check=True,
                           stdout=subprocess.DEVNULL)
        cases = {
            "--version": ["--version"],
            "--help": ["--help"],
            "submit": ["submit", "hello", "--args", '{"name": "x"}'],
            "job show": ["job", "show", "1"],
        }
        times: dict[str, dict[str, list[tuple[float, float]]]] = {c: {} for c in commands}
        for name, args in cases.items():
            for command in commands.values():
                for _ in range(warmup):
                    _time([*command, *args], folder, env)
            for _ in range(runs):
                for label, command in commands.items():
                    times[label].setdefault(name, []).append(
                        _time([*command, *args], folder, env))
        return {label: {name: _summary(t) for name, t in cases_times.items()}
                for label, cases_times in times.items()}


def _summary(runs: list[tuple[float, float]]) -> dict[str, float]:
    wall = [w for w, _ in runs]
    return {"median": statistics.median(wall), "min": min(wall), "max": max(wall),
            "cpu_median": statistics.median(c for _, c in runs)}


def _command(text: str) -> list[str]:
    """``text`` as argv, its program resolved (runs happen in a temporary folder);
    ``env NAME=VALUE … PROGRAM …`` resolves PROGRAM."""
    command = shlex.split(text)
    at = 0
    while at < len(command) - 1 and (command[at] == "env" or "=" in command[at]):
        at += 1
    command[at] = shutil.which(command[at]) or str(Path(command[at]).resolve())
    return command


def _print(results: dict[str, dict[str, float]], runs: int, title: str) -> None:
    print(f"{title:<12} {'median':>8} {'min':>8} {'max':>8} {'cpu':>8}  target   ({runs} runs, "
          f"load {os.getloadavg()[0]:.1f})")
    for name, r in results.items():
        target = TARGETS.get(name)
        mark = "" if target is None else f"≤ {target:.2f}s " + (
            "ok" if r["median"] <= target else "MISSED")
        print(f"{name:<12} {r['median']:>7.3f}s {r['min']:>7.3f}s {r['max']:>7.3f}s "
              f"{r['cpu_median']:>7.3f}s  {mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--taskyard", default=shutil.which("taskyard")
                        or str(Path(sys.executable).with_name("taskyard")))
    parser.add_argument("--against", help="a second command, timed in alternation")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    commands = {"taskyard": _command(opts.taskyard)}
    if opts.against:
        commands["against"] = _command(opts.against)
    results = measure(commands, opts.runs)
    if opts.json:
        print(json.dumps(results if opts.against else results["taskyard"], indent=2))
        return
    for label, found in results.items():
        _print(found, opts.runs, label if opts.against else "case")


if __name__ == "__main__":
    main()
