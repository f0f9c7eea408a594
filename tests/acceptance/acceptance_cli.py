"""Running the real ``taskyard`` command in subprocesses, for the acceptance tests.

Every call starts a Python process (about half a second of CPU), so the tests
batch their checks: independent calls run concurrently through :meth:`Cli.many`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|\+00:00)$")

HANDLERS = textwrap.dedent('''
    """Handlers for the acceptance tests, imported by workers from the test's folder."""
    import os


    def add(a, b):
        return {"sum": a + b, "job_id": os.environ.get("TASKYARD_JOB_ID")}
''')


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self
        return json.loads(self.out)

    def ok(self) -> Result:
        assert self.code == 0, self
        return self

    def one_line_error(self, code: int) -> str:
        """Assert exit ``code``, nothing on stdout, one ``taskyard: error:`` line on stderr."""
        assert self.code == code, self
        assert self.out == "", self
        lines = self.err.splitlines()
        assert len(lines) == 1, self
        assert lines[0].startswith("taskyard: error: "), self
        assert "Traceback" not in self.err
        return lines[0]


class Cli:
    """``python -m taskyard --db URL ...`` in ``cwd`` (where the handlers module lives)."""

    def __init__(self, url: str, cwd: Path) -> None:
        self.url = url
        self.cwd = cwd
        # Only --db chooses the database; the handlers module is importable from cwd.
        self.env = {k: v for k, v in os.environ.items() if k != "TASKYARD_DB"}
        self.env["PYTHONPATH"] = str(cwd)

    def argv(self, args: Sequence[str], db: str | None = None) -> list[str]:
        return [sys.executable, "-m", "taskyard", "--db", db or self.url, *args]

    def popen(self, *args: str, db: str | None = None, **kw: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(args, db), cwd=self.cwd, env=self.env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **kw)

    def __call__(self, *args: str, db: str | None = None, timeout: float = 60) -> Result:
        return self.many([list(args)], db=db, timeout=timeout)[0]

    def many(self, calls: Sequence[Sequence[str]], *, db: str | None = None,
             timeout: float = 60) -> list[Result]:
        """Run independent calls concurrently; results in order."""
        return self.many_on([(db or self.url, call) for call in calls], timeout=timeout)

    def many_on(self, calls: Sequence[tuple[str, Sequence[str]]], *,
                timeout: float = 60) -> list[Result]:
        """Run ``(database URL, args)`` calls concurrently; results in order."""
        procs = [self.popen(*args, db=db) for db, args in calls]
        results = []
        for (_, args), proc in zip(calls, procs, strict=True):
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"taskyard {' '.join(args)} took more than {timeout}s: {err}")
            results.append(Result(tuple(args), proc.returncode, out, err))
        return results


def stop(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """SIGTERM a daemon started with :meth:`Cli.popen` and wait for it (SIGKILL past
    ``timeout``); its stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err
