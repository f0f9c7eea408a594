"""Without ``opentelemetry`` importable at all (the ``otel`` extra not installed), the
trace context still goes from a command's ``TRACEPARENT`` to its job, into the handler's
environment, and on to a job the handler submits (docs/tracing.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from taskyard.api.yard import Yard

GIVEN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
# Imported first by every Python process started with it on PYTHONPATH: the worker, its
# handlers' children, the CLI.
BLOCKER = '''
import sys

class _NoOtel:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(f"{name}: blocked by the test (no otel extra)")
        return None

sys.meta_path.insert(0, _NoOtel())
'''
PROBE = ('import sys, taskyard.worker.tracing as t, taskyard.model.tracing as m; '
         't.AttemptSpans(); assert m.current_context() is None; '
         'print("otel" if "opentelemetry" in sys.modules else "none")')


def _run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_context_is_passed_on_without_opentelemetry(db_url: str, tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), root])}
    assert _run([sys.executable, "-c", PROBE], env).strip() == "none"
    with Yard(db_url) as yard:
        yard.add_task_type("parent", "python:tests.handlers_tracing:submit_child_plain")
        yard.add_task_type("child", 'shell:echo "child in $TRACEPARENT"')
    taskyard = [sys.executable, "-m", "taskyard", "--db", db_url]
    _run([*taskyard, "submit", "parent", "--args", f'{{"db": "{db_url}", "type": "child"}}'],
         {**env, "TRACEPARENT": GIVEN})
    _run([*taskyard, "up", "--until-idle"], {k: v for k, v in env.items()
                                             if k not in ("TRACEPARENT", "TRACESTATE")})
    with Yard(db_url) as yard:
        parent, child = yard.get_job(1), yard.get_job(2)
    assert parent.state == "succeeded", parent.error
    assert parent.result == {"child": 2, "env": GIVEN, "otel": False}
    assert child.state == "succeeded" and child.trace_context == GIVEN
    assert f"child in {GIVEN}" in (child.attempts[-1].stdout_tail or "")
