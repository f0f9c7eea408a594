"""Child processes of the worker: a reusable Python child, and shell commands."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import IO, Any

from taskyard.core.handlers import render_shell, shell_arg_env
from taskyard.core.stages import StageError, StageReport, parse_stage_line, shell_done_names
from taskyard.worker.child import read_tail
from taskyard.worker.guardian import Guardian

# A Python child is a fresh interpreter (as multiprocessing's "spawn": no state inherited
# from the worker's threads and connections) started by subprocess, with a socket pair
# for its pipe: multiprocessing would also start its resource tracker, a third
# interpreter per worker (~12 MiB) for semaphores the children never create.
# The child's path and interpreter flags (-W, -X, -O...) are the worker's, as "spawn"
# makes them.
_CHILD = ("import sys; sys.path[:] = {path!r}; "
          "from taskyard.worker.child import serve; serve({fd}, {cwd!r}, {output!r})")
_FLAGS: Callable[[], list[str]] = subprocess._args_from_interpreter_flags  # type: ignore[attr-defined]
POLL = 0.05
# With a guardian, a shell command first waits for the worker's go-ahead on its stdin,
# sent once the guardian watches its group: a worker killed between the two would
# otherwise leave it running unowned. Then the worker is dead, the read meets EOF and
# the command never runs.
_GATE = "read -r taskyard_gate || exit 1; unset taskyard_gate; exec 0</dev/null; "


class Stopped(Exception):
    """The attempt was stopped from outside (cancel, fencing, shutdown)."""


def terminate(pid: int, *, group: bool, grace: float, alive: Callable[[], bool]) -> int | None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; returns the signal that ended it."""
    sender = os.killpg if group else os.kill
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            sender(pid, sig)
        except ProcessLookupError:
            return None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive():
                return int(sig)
            time.sleep(0.01)
    return int(signal.SIGKILL)


class PythonChild:
    """One spawned interpreter that runs Python handlers one after the other. With
    ``output``, its stdout and stderr are two files in a folder of its own, which the
    worker reads while a job runs (:attr:`output`), removed by :meth:`close` and
    :meth:`discard`."""

    def __init__(self, guardian: Guardian | None = None, *, output: bool = False) -> None:
        self.folder = tempfile.mkdtemp(prefix="taskyard-child-") if output else None
        self.output = None if self.folder is None else (
            os.path.join(self.folder, "stdout"), os.path.join(self.folder, "stderr"))
        ours, theirs = socket.socketpair()
        with theirs:
            # A session (and process group) of its own from its first instruction, so
            # that the guardian, watching it from now on, can end it and whatever its
            # handlers start, if the worker dies; and a terminal's Ctrl-C is the worker's.
            self.process = subprocess.Popen(
                [sys.executable, *_FLAGS(), "-c", _CHILD.format(
                    path=sys.path, fd=theirs.fileno(), cwd=os.getcwd(), output=self.output)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, start_new_session=True)
        # Kept open (not inherited by the child), once it runs: a spawn that fails leaves
        # none behind. Emptied by descriptor, and only when written to (see empty_output).
        self._output_fds = [os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                            for path in self.output or ()]
        self._conn = Connection(ours.detach())
        # One poll object for the child's whole life (Connection.poll builds a selector
        # per call, which costs more than running a no-op job).
        self._poller = select.poll()
        self._poller.register(self._conn.fileno(), select.POLLIN)
        self._guardian = guardian
        if guardian is not None:
            guardian.watch(self.pid)

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def _join(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)

    def run(self, msg: dict[str, Any], deadline: float | None,
            stop_requested: Callable[[], bool],
            on_stage: Callable[[StageReport], bool]) -> dict[str, Any]:
        """Send a job and wait for its outcome, answering its stage reports with
        ``on_stage`` (accepted or not); raise TimeoutError or Stopped."""
        self._send(msg)
        return self.wait(deadline, stop_requested, on_stage)

    def send_pipeline(self, msgs: list[dict[str, Any]]) -> None:
        """Send several jobs at once: the child runs them in order, and :meth:`wait`
        returns their outcomes one by one (one pipe message for the lot)."""
        self._send(msgs)

    def wait(self, deadline: float | None, stop_requested: Callable[[], bool],
             on_stage: Callable[[StageReport], bool]) -> dict[str, Any]:
        """The outcome of the job the child runs now (see :meth:`run`)."""
        while True:
            wait = POLL if deadline is None else max(0.0, min(POLL, deadline - time.monotonic()))
            try:
                if self._poller.poll(wait * 1000):
                    reply: dict[str, Any] = pickle.loads(self._conn.recv_bytes())
                    if "stage" not in reply:
                        return reply
                    state, result = reply["state"], reply.get("result")
                    report = (StageReport(reply["stage"], state, error=result)
                              if state == "failed" else StageReport(reply["stage"], state, result))
                    self._send({"accepted": on_stage(report)})
                    continue
            except (EOFError, OSError):
                self._join(1)
                raise ChildDied(self.process.returncode) from None
            if not self.is_alive() and not self._conn.poll(0):
                raise ChildDied(self.process.returncode)
            if stop_requested():
                raise Stopped
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError

    def _send(self, msg: dict[str, Any] | list[dict[str, Any]]) -> None:
        self._conn.send_bytes(pickle.dumps(msg, pickle.HIGHEST_PROTOCOL))

    def kill(self, grace: float) -> int | None:
        # Its group: the child leads it (start_new_session), with what its handler started.
        sig = terminate(self.pid, group=True, grace=grace, alive=self.is_alive)
        self._join(1)
        self._conn.close()
        self._unwatch()
        return sig

    def close(self) -> None:
        self._conn.close()
        self._join(2)
        if self.is_alive():
            self.kill(0.5)
        self._unwatch()
        self.discard()

    def empty_output(self) -> None:
        """Empty its output files before a job (the child appends to them), those the
        last job wrote to: a truncate writes the file's times even when it was empty
        already (4.0 µs by path, 2.9 by descriptor; a descriptor's fstat 0.9), twice
        before each lone job, on the way from its placement to its start."""
        for fd in self._output_fds:
            with contextlib.suppress(OSError):
                if os.fstat(fd).st_size:
                    os.ftruncate(fd, 0)

    def discard(self) -> None:
        """Remove its output files (once it ended and they were read)."""
        fds, self._output_fds = self._output_fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _unwatch(self) -> None:
        if self._guardian is not None:
            self._guardian.unwatch(self.pid)
            self._guardian = None


class ChildDied(Exception):
    def __init__(self, exitcode: int | None) -> None:
        super().__init__(f"worker child died (exit code {exitcode})")
        self.exitcode = exitcode


class StageFile:
    """Reads the stage reports a shell handler appends to ``$TASKYARD_STAGES`` (one line
    each, see :mod:`taskyard.core.stages`) and hands each complete line to ``on_stage``."""

    def __init__(self, path: str, on_stage: Callable[[StageReport], bool]) -> None:
        self.path = path
        self.on_stage = on_stage
        self._offset = 0
        self._partial = b""
        self.problems: list[str] = []
        self.refused = False

    def poll(self, *, final: bool = False) -> None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = b"" if final else lines.pop()
        for raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                report = parse_stage_line(line)
            except StageError as exc:
                self.problems.append(f"taskyard: ignored: {exc}")
                continue
            if not self.on_stage(report):
                self.refused = True
                return


def run_shell(
    command: str, args: dict[str, Any], env: dict[str, str], *, deadline: float | None,
    stop_requested: Callable[[], bool], grace: Callable[[], float], tail: int,
    stages: dict[str, Any] | None = None,
    on_stage: Callable[[StageReport], bool] | None = None,
    guardian: Guardian | None = None,
    watch: Callable[[str, str], Callable[[], None]] | None = None,
) -> dict[str, Any]:
    """Run a shell handler; returns an outcome dict. Raises TimeoutError or Stopped
    after the process group has been terminated (tails are attached to the exception).

    Stages: the command appends reports to ``$TASKYARD_STAGES``; the stages earlier
    attempts finished are named in ``$TASKYARD_STAGES_DONE`` and their results are in
    the JSON object file ``$TASKYARD_STAGE_RESULTS``. ``watch(stdout, stderr)``: called
    with the output files once the command started (live output); what it returns is
    called once the command ended, before the files go."""
    rendered = render_shell(command, args)
    done = dict(stages or {})
    with tempfile.TemporaryDirectory(prefix="taskyard-") as tmp:
        result_path = os.path.join(tmp, "result")
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        stage_path, done_path = os.path.join(tmp, "stages"), os.path.join(tmp, "stages-done.json")
        with open(done_path, "w", encoding="utf-8") as fh:
            json.dump(done, fh)
        reader = StageFile(stage_path, on_stage or (lambda _report: True))
        full_env = {**os.environ, **env, **shell_arg_env(command, args),
                    "TASKYARD_RESULT": result_path,
                    "TASKYARD_STAGES": stage_path, "TASKYARD_STAGES_DONE": shell_done_names(done),
                    "TASKYARD_STAGE_RESULTS": done_path}
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = _spawn(rendered, out, err, full_env, guardian)
            ended = None if watch is None else watch(out_path, err_path)
            try:
                interrupted = _supervise(proc, reader, stop_requested, deadline, grace)
            finally:
                if ended is not None:
                    ended()
            if guardian is not None:
                guardian.unwatch(proc.pid)
        stderr = read_tail(err_path, tail)
        if reader.problems:
            stderr = (stderr + "\n".join(reader.problems) + "\n")[-tail:]
        tails = {"stdout_tail": read_tail(out_path, tail), "stderr_tail": stderr}
        if interrupted is None and reader.refused:
            interrupted = Stopped()  # a stage report was refused as the command ended
        if interrupted is not None:
            interrupted.args = (tails,)
            raise interrupted
        code = proc.returncode
        exit_code = code if code >= 0 else 128 - code
        outcome: dict[str, Any] = {"exit_code": exit_code, **tails,
                                   "result": _read_result(result_path)}
        if exit_code == 0:
            outcome["state"] = "succeeded"
        else:
            outcome.update(state="failed", error=f"exit code {exit_code}")
        return outcome


def _spawn(rendered: str, out: IO[bytes], err: IO[bytes], env: dict[str, str],
           guardian: Guardian | None) -> subprocess.Popen[bytes]:
    """Start the command in a process group of its own; with a ``guardian``, behind a
    gate that holds it until the guardian watches it (so it cannot outlive us)."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", rendered if guardian is None else _GATE + rendered],
        stdout=out, stderr=err,
        stdin=subprocess.DEVNULL if guardian is None else subprocess.PIPE,
        env=env, start_new_session=True,
    )
    if guardian is not None:
        guardian.watch(proc.pid)
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # it may have ended (a syntax error)
            proc.stdin.write(b"\n")
            proc.stdin.flush()
        with contextlib.suppress(OSError):
            proc.stdin.close()
    return proc


def _supervise(proc: subprocess.Popen[bytes], reader: StageFile,
               stop_requested: Callable[[], bool], deadline: float | None,
               grace: Callable[[], float]) -> BaseException | None:
    """Follow the command until it ends, reading its stage reports; terminate it when
    stopped or past its deadline (then return why: Stopped or TimeoutError)."""
    interrupted: BaseException | None = None
    while proc.poll() is None:
        reader.poll()
        if stop_requested():
            interrupted = Stopped()
        elif deadline is not None and time.monotonic() >= deadline:
            interrupted = TimeoutError()
        if interrupted is not None:
            terminate(proc.pid, group=True, grace=grace(), alive=lambda: proc.poll() is None)
            proc.wait()
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(POLL)
    if interrupted is None:
        reader.poll(final=True)
    # The handler has ended; what it left running in its group (background jobs)
    # would run unowned: end it too.
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    return interrupted


def _read_result(path: str) -> Any:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text[:-1] if text.endswith("\n") else text
