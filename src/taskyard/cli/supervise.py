"""Local worker processes for ``taskyard up``: started, restarted when they exit, stopped.

A worker that exits while ``up`` is not stopping is restarted under the same name.
The delay before a restart doubles with each exit that comes soon after a start
(``first_delay``, 2x, 4x … up to ``max_delay``), so a worker that cannot start
(bad handler import path, database refusing it) is retried at a slow pace instead
of in a tight loop; a worker that ran for ``steady`` seconds earns back the short delay.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

log = logging.getLogger("taskyard.up")

Spawn = Callable[[Sequence[str]], "subprocess.Popen[bytes]"]
OnExit = Callable[[str, int], None]
"""Called with a worker's name and the pid of its process once that process has ended."""


def _spawn(cmd: Sequence[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL)


@dataclass
class _Slot:
    name: str
    cmd: Sequence[str]
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    quick_exits: int = 0
    restart_at: float | None = None
    restarts: int = 0
    codes: list[int | None] = field(default_factory=list)


class WorkerSupervisor:
    """Keeps one process per command running until :meth:`stop`."""

    def __init__(self, commands: dict[str, Sequence[str]], *, first_delay: float = 1.0,
                 max_delay: float = 60.0, steady: float = 30.0, spawn: Spawn = _spawn,
                 clock: Callable[[], float] = time.monotonic,
                 on_exit: OnExit | None = None) -> None:
        self.slots = [_Slot(name, cmd) for name, cmd in commands.items()]
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.steady = steady
        self._spawn = spawn
        self._clock = clock
        self._on_exit = on_exit
        self._stopping = False

    def start(self) -> None:
        for slot in self.slots:
            self._start(slot)

    def poll(self) -> None:
        """Notice exited workers and restart those whose delay has passed."""
        if self._stopping:
            return
        now = self._clock()
        for slot in self.slots:
            if slot.proc is not None and slot.proc.poll() is not None:
                self._exited(slot, now)
            if slot.proc is None and slot.restart_at is not None and now >= slot.restart_at:
                slot.restarts += 1
                self._start(slot)

    def stop(self, grace: float = 30.0) -> list[int | None]:
        """SIGTERM every worker, wait up to ``grace`` seconds, then SIGKILL; no restarts
        after this. Returns the exit codes of the workers that were running."""
        self._stopping = True
        running = [s for s in self.slots if s.proc is not None and s.proc.poll() is None]
        for slot in running:
            assert slot.proc is not None
            slot.proc.send_signal(signal.SIGTERM)
        deadline = self._clock() + grace
        codes: list[int | None] = []
        for slot in running:
            assert slot.proc is not None
            try:
                slot.proc.wait(max(deadline - self._clock(), 0.0))
            except subprocess.TimeoutExpired:
                log.error("event=worker-killed worker=%s pid=%d after=%.0fs",
                          slot.name, slot.proc.pid, grace)
                slot.proc.kill()
                slot.proc.wait()
            codes.append(slot.proc.returncode)
        return codes

    def _start(self, slot: _Slot) -> None:
        slot.restart_at = None
        slot.started_at = self._clock()
        try:
            slot.proc = self._spawn(slot.cmd)
        except OSError as exc:
            # Counted like a worker that died at once: retried after the backoff.
            log.error("event=worker-spawn-failed worker=%s error=%s", slot.name, exc)
            slot.proc = None
            self._schedule_restart(slot, slot.started_at, None)
            return
        if slot.restarts:
            log.warning("event=worker-restarted worker=%s pid=%d restarts=%d",
                        slot.name, slot.proc.pid, slot.restarts)

    def _exited(self, slot: _Slot, now: float) -> None:
        assert slot.proc is not None
        code, pid = slot.proc.returncode, slot.proc.pid
        slot.proc = None
        self._schedule_restart(slot, now, code)
        if self._on_exit is not None:
            self._on_exit(slot.name, pid)

    def _schedule_restart(self, slot: _Slot, now: float, code: int | None) -> None:
        ran = now - slot.started_at
        slot.quick_exits = slot.quick_exits + 1 if ran < self.steady else 0
        delay = min(self.first_delay * 2 ** max(slot.quick_exits - 1, 0), self.max_delay)
        slot.restart_at = now + delay
        slot.codes.append(code)
        log.error("event=worker-exited worker=%s code=%s ran=%.1fs restart_in=%.1fs",
                  slot.name, code, ran, delay)
