"""``taskyard`` daemons as real processes for the fleet tests: each logs to a file of
its own, and all of them are stopped (SIGTERM, then SIGKILL) whatever happens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Daemons:
    """Processes started by :meth:`start`, stopped by :meth:`stop`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("TASKYARD_DB", "TASKYARD_LISTEN_DB", "TASKYARD_SHARED_LISTENER")}
        self.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
        self.env["TASKYARD_RUN_DIR"] = str(folder)  # the shared listener's socket

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("ab")
        proc = subprocess.Popen([sys.executable, "-m", "taskyard", *args], cwd=ROOT,
                                env={**self.env, "PGAPPNAME": name}, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
        log.close()
        self.procs[name] = proc
        return proc

    def run(self, *args: str, timeout: float = 120) -> str:
        """A command to its end: its stdout (it must succeed)."""
        done = subprocess.run([sys.executable, "-m", "taskyard", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"--- {name}\n{self.log(name)[-3000:]}" for name in self.procs)

    def alive(self) -> list[str]:
        return [name for name, p in self.procs.items() if p.poll() is None]

    def stop(self, timeout: float = 60) -> dict[str, int]:
        """SIGTERM to all, then SIGKILL to what outlives ``timeout``: the exit codes."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        codes = {}
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = proc.wait(30)
        return codes
