"""The public API is explicit and pinned."""

from __future__ import annotations

import subprocess
import sys

import taskyard


def test_exported_names_are_pinned() -> None:
    assert taskyard.__all__ == [
        "Conflict", "Fenced", "Graph", "GraphRecord", "InvalidInput", "JobContext",
        "JobFailed", "JobHandle", "JobRecord",
        "JobState", "NotFound", "Prerequisite", "SchemaMissing", "StoreError", "TaskTypeSpec",
        "WorkerRecord",
        "Yard", "current_job", "stage",
    ]
    for name in taskyard.__all__:
        assert getattr(taskyard, name).__name__ == name


def test_child_processes_do_not_load_the_database_stack() -> None:
    code = "import sys, taskyard.worker.child; print('sqlalchemy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
