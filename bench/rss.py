"""W5: peak resident memory of process trees, from ``/proc`` (Linux).

``VmHWM`` in ``/proc/PID/status`` is a process's own peak RSS. A tree's figure is the sum
of the peaks of every process seen in it (the root and all its descendants, sampled in
a background thread, so children that come and go are counted): an upper bound of the
tree's simultaneous peak, and the same rule for every system. ``reset_peak`` clears a
process's ``VmHWM`` (``/proc/PID/clear_refs``), so a measurement can exclude its setup.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROC = Path("/proc")


def hwm_kb(pid: int | str, field: str = "VmHWM:") -> int | None:
    """The process's peak RSS in KiB (``field="VmRSS:"``: its RSS now), or None when it
    is gone (or not on Linux)."""
    try:
        with open(PROC / str(pid) / "status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def reset_peak(pid: int | str = "self") -> bool:
    """Reset the process's VmHWM to its current RSS (Linux >= 4.0); False when refused."""
    try:
        with open(PROC / str(pid) / "clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _children_map() -> dict[int, list[tuple[int, str]]]:
    """ppid -> [(pid, start time)] for every process."""
    tree: dict[int, list[tuple[int, str]]] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{entry.path}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 19:
            tree.setdefault(int(fields[1]), []).append((int(entry.name), fields[19]))
    return tree


def descendants(roots: list[int]) -> set[int]:
    """The roots and every process below them, now."""
    tree = _children_map()
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(child for child, _ in tree.get(pid, ()))
    return found


class TreeSampler:
    """Samples the peak RSS of named groups of process trees every ``interval`` seconds."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.roots: dict[str, list[int]] = {}
        self.peaks: dict[str, dict[tuple[int, str], int]] = {}
        self.live: dict[str, int] = {}  # group -> highest sum of VmRSS in one sample
        self.names: dict[tuple[int, str], str] = {}  # process -> what it runs (see label)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, group: str, pid: int) -> None:
        with self._lock:
            self.roots.setdefault(group, []).append(pid)
            self.peaks.setdefault(group, {})
            self.live.setdefault(group, 0)

    def sample(self) -> None:
        """Read every tracked process once (also called right before processes stop)."""
        tree = _children_map()
        with self._lock:
            groups = {g: list(pids) for g, pids in self.roots.items()}
        for group, roots in groups.items():
            seen = self.peaks[group]
            todo = [(pid, _start_time(pid)) for pid in roots]
            now = 0
            while todo:
                pid, start = todo.pop()
                kb = hwm_kb(pid)
                if kb is not None:
                    # The latest reading, not the max: VmHWM only grows within one
                    # image, and drops at an exec (or reset_peak). A child sampled
                    # between fork and exec shows its parent's peak, which must not
                    # count once it runs the program it was started for.
                    seen[(pid, start)] = kb
                    self.names[(pid, start)] = label(pid)  # as of its image now
                    now += hwm_kb(pid, "VmRSS:") or 0
                todo.extend(tree.get(pid, ()))
            self.live[group] = max(self.live[group], now)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> TreeSampler:
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def peak_mb(self) -> dict[str, float]:
        """Per group: the sum of the peaks of the processes seen, in MiB."""
        with self._lock:
            return {g: round(sum(p.values()) / 1024, 1) for g, p in self.peaks.items()}

    def live_peak_mb(self) -> dict[str, float]:
        """Per group: the highest sum of the processes' RSS in one sample, in MiB: the
        figure for trees that fork a process per task, whose peaks never coexist."""
        with self._lock:
            return {g: round(kb / 1024, 1) for g, kb in self.live.items()}

    def processes(self) -> dict[str, int]:
        with self._lock:
            return {g: len(p) for g, p in self.peaks.items()}

    def breakdown(self) -> list[dict[str, object]]:
        """Every process counted in :meth:`peak_mb`: its group, pid, what it runs
        (:func:`label`) and its peak in MiB; the parts a group's figure sums."""
        with self._lock:
            return [{"group": g, "pid": pid, "runs": self.names.get((pid, start), "?"),
                     "peak_mb": round(kb / 1024, 1)}
                    for g, peaks in self.peaks.items() for (pid, start), kb in peaks.items()]


_WORD = re.compile(r"[A-Za-z][\w.-]*")


def label(pid: int) -> str:
    """What a process runs, in a few words: the first two plain words of its command
    line after the program (``taskyard worker``, ``taskyard-guardian``: no options,
    URLs nor code), else its program's name (``python3``, ``sh``)."""
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
        comm = (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return "?"
    words = [a for a in (x.decode(errors="replace") for x in argv[1:]) if _WORD.fullmatch(a)]
    return " ".join(words[:2]) or comm


def _start_time(pid: int) -> str:
    try:
        with open(PROC / str(pid) / "stat") as fh:
            stat = fh.read()
    except OSError:
        return "?"
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else "?"


@contextmanager
def sampling(interval: float = 0.2) -> Iterator[TreeSampler]:
    sampler = TreeSampler(interval).start()
    try:
        yield sampler
    finally:
        sampler.stop()
