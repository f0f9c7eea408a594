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
import threading

log = logging.getLogger("taskyard.worker")

# A POSIX shell loop, not a Python interpreter: ~1.6 MiB of memory instead of ~9.4 MiB
# (python -S -I), for a process every worker keeps for its whole life. Its argument
# ``taskyard-guardian`` ($0) names it in ps. It reads "+PGID" and "-PGID" lines and keeps
# the watched groups as " a b c ", each at most once: a group unwatched must never be
# killed (its number may belong to another process by then).
NAME = "taskyard-guardian"
_CODE = r"""
trap '' INT TERM  # a terminal's Ctrl-C and `kill` are for the worker; we end at EOF
groups=' '
while IFS= read -r line; do
  pgid=${line#?}
  case $pgid in ''|*[!0-9]*) continue ;; esac
  case $line in
    +*) case $groups in *" $pgid "*) ;; *) groups="$groups$pgid " ;; esac ;;
    -*) case $groups in *" $pgid "*) groups="${groups%% $pgid *} ${groups#* $pgid }" ;; esac ;;
  esac
done
# The leader itself first, then its group: a watched process that does not lead a group
# (none does, as both kinds of handler start in a session of their own) still dies.
for pgid in $groups; do
  kill -9 "$pgid" 2>/dev/null
  kill -9 "-$pgid" 2>/dev/null
done
"""


class Guardian:
    """The worker's side of the guardian: :meth:`watch` a group, :meth:`unwatch` it when
    its leader has been reaped, :meth:`close` on a clean exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        try:
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                ["/bin/sh", "-c", _CODE, NAME], stdin=subprocess.PIPE,
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
