"""A Python child's output files (worker/processes.py:PythonChild with ``output``), which
the worker reads while a job runs: emptied before a job only when the last one wrote
there, through descriptors the worker keeps and closes with the files."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from taskyard.worker.processes import PythonChild


@pytest.fixture
def child() -> Iterator[PythonChild]:
    made = PythonChild(output=True)
    try:
        yield made
    finally:
        made.close()


def test_output_written_by_a_job_is_emptied_before_the_next(child: PythonChild) -> None:
    assert child.output is not None
    stdout, stderr = child.output
    with open(stdout, "a") as out:
        out.write("the last job's line\n")
    child.empty_output()
    assert os.path.getsize(stdout) == 0 and os.path.getsize(stderr) == 0


def test_empty_files_are_left_as_they_are(child: PythonChild) -> None:
    assert child.output is not None
    stdout, _ = child.output
    os.utime(stdout, ns=(1_000_000_000, 1_000_000_000))
    child.empty_output()
    assert os.stat(stdout).st_mtime_ns == 1_000_000_000  # no truncate: not even its times


def test_the_descriptors_go_with_the_files(child: PythonChild) -> None:
    assert child.output is not None
    folder = os.path.dirname(child.output[0])

    def open_on_them() -> int:
        return sum(os.path.realpath(f"/proc/self/fd/{fd}").startswith(folder + "/")
                   for fd in os.listdir("/proc/self/fd")
                   if os.path.exists(f"/proc/self/fd/{fd}"))

    assert open_on_them() == 2
    child.close()
    assert open_on_them() == 0 and not os.path.exists(folder)
