"""`make demo`: taskyard's main job on embedded SQLite, end to end, through the real CLI.

Registers task types (Python and shell handlers), submits a batch of jobs and a
build → test → package graph, runs `taskyard up --workers 2 --until-idle`, then
prints a summary table and the graph's tree. Safe to run again: it starts from a
fresh folder each time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
RUN = HERE / "run"
console = Console(width=max(140, shutil.get_terminal_size().columns))


def taskyard(*args: str, capture: bool = True) -> str:
    proc = subprocess.run([sys.executable, "-m", "taskyard", *args], cwd=HERE, text=True,
                          capture_output=capture, env=os.environ, check=False)
    if proc.returncode != 0:
        console.print(f"[red]taskyard {' '.join(args)} failed[/red]\n{proc.stderr}")
        sys.exit(1)
    return proc.stdout.strip() if capture else ""


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main() -> int:
    shutil.rmtree(RUN, ignore_errors=True)
    RUN.mkdir(parents=True)
    os.environ["TASKYARD_DB"] = f"sqlite:///{RUN / 'taskyard.db'}"
    console.rule("taskyard demo: embedded SQLite")
    taskyard("init")
    out = taskyard("apply", str(HERE / "taskyard.yaml"))
    console.print(out)
    expected: dict[str, str] = {}
    for i, size in enumerate((32, 64, 128)):
        expected[taskyard("submit", "checksum", "--args", json.dumps({"size_kb": size,
                                                                      "seed": i}))] = "succeeded"
    expected[taskyard("submit", "words", "--priority", "5", "--args",
                      json.dumps({"text": "to be or not to be"}))] = "succeeded"
    expected[taskyard("submit", "flaky", "--args", '{"fail_first": 1}')] = "succeeded"
    expected[taskyard("submit", "disk", "--args", json.dumps({"path": str(HERE)}))] = "succeeded"
    for n in (1, 2):
        expected[taskyard("submit", "json-shell", "--args", json.dumps({"n": n}))] = "succeeded"
    expected[taskyard("submit", "broken")] = "failed"
    graph_id = taskyard("graph", "submit", str(HERE / "pipeline.yaml"))
    console.print(f"submitted {len(expected)} jobs and graph {graph_id}; running "
                  "[bold]taskyard up --workers 2 --until-idle[/bold]")
    started = time.monotonic()
    taskyard("up", "--workers", "2", "--capacity", "2", "--until-idle", "--interval", "0.5")
    took = time.monotonic() - started
    jobs = json.loads(taskyard("jobs", "list", "--json", "--limit", "1000"))
    table = Table(title=f"jobs (all done in {took:.1f}s)")
    for column in ("job", "type", "label", "state", "tries", "worker", "duration", "result"):
        table.add_column(column)
    ok = True
    for job in sorted(jobs, key=lambda j: j["id"]):
        want = expected.get(str(job["id"]), "succeeded")
        ok &= job["state"] == want
        took_s = ""
        if job["started_at"] and job["finished_at"]:
            span = _epoch(job["finished_at"]) - _epoch(job["started_at"])
            took_s = f"{span * 1000:.0f} ms"
        style = "green" if job["state"] == want else "red"
        result = json.dumps(job["result"]) if job["result"] is not None else (
            job["error"] or "")
        table.add_row(str(job["id"]), job["type"], job["label"] or "",
                      f"[{style}]{job['state']}[/{style}]", str(job["attempt"]),
                      job["worker"] or "", took_s, result[:60])
    console.print(table)
    console.print(taskyard("graph", "show", graph_id), highlight=False)
    graph = json.loads(taskyard("graph", "show", graph_id, "--json"))
    ok &= graph["state"] == "finished"
    console.print("[green]demo OK[/green]" if ok else "[red]demo: unexpected states[/red]")
    console.print(
        "\n[bold]See this run in the dashboard:[/bold] [cyan]make ui[/cyan] serves it at "
        "[link]http://127.0.0.1:8080/[/link] (it prints a token to sign in with).\n"
        f"By hand: taskyard --db {os.environ['TASKYARD_DB']} token create --name me "
        "--scope write\n"
        f"         taskyard --db {os.environ['TASKYARD_DB']} serve --port 8080   "
        "# then open http://127.0.0.1:8080/ and paste the token", highlight=False)
    # What a newcomer needs next: the command on PATH (README, "By hand").
    venv = Path(sys.prefix)
    console.print(f"next: [bold]. {venv / 'bin' / 'activate'}[/bold] puts taskyard on PATH "
                  f"(or run {venv / 'bin' / 'taskyard'}); then README's \"By hand\" and "
                  "docs/tutorial.md", highlight=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
