"""A guardian process that kills a worker's handlers if the worker dies abruptly.

A worker killed with SIGKILL cannot stop its children: a shell handler runs in a
session of its own and would run on, unowned, while the scheduler requeues its job
elsewhere (two attempts at once, a lock held twice). The guardian is a tiny process
that the worker feeds the process groups of its handlers over a pipe; when the pipe
closes — the worker exited, however it died — it SIGKILLs every group still listed.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

log = logging.getLogger("taskyard.worker")

# Runs with -S -I: no site packages, no user environment; starts in ~15 ms.
_CODE = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)   # a terminal's Ctrl-C is for the worker
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so is `kill`; we end when the pipe closes
groups = set()
for line in sys.stdin:
    op, pgid = line[0], int(line[1:])
    (groups.add if op == "+" else groups.discard)(pgid)
for pgid in groups:
    # The leader itself first, then its group: a watched process that does not lead a
    # group (none does, as both kinds start in a session of their own) still dies.
    for kill in (os.kill, os.killpg):
        try:
            kill(pgid, signal.SIGKILL)
        except OSError:
            pass
"""


class Guardian:
    """The worker's side of the guardian: :meth:`watch` a group, :meth:`unwatch` it when
    its leader has been reaped, :meth:`close` on a clean exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        try:
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                [sys.executable, "-S", "-I", "-c", _CODE], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True)
        except OSError:
            log.exception("event=guardian-failed (handlers may outlive a killed worker)")
            self._proc = None

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.stdin is None:
                return
            try:
                self._proc.stdin.write(line)
            except (BrokenPipeError, ValueError):
                log.error("event=guardian-gone")
                self._proc = None

    def watch(self, pgid: int) -> None:
        self._send(f"+{pgid}\n")

    def unwatch(self, pgid: int) -> None:
        self._send(f"-{pgid}\n")

    def close(self) -> None:
        """Let the guardian go (it kills any group still watched, then exits)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
