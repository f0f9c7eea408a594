"""bench.fleet_probe's readings of the machine: the kernel's threads counted apart from
the fleet (the machine's own work in the latency phase)."""

from __future__ import annotations

import os
import sys

import pytest

from bench import fleet_probe as probe


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kernel_threads_are_the_children_of_kthreadd_by_name() -> None:
    used = probe.kernel_threads()
    assert used, "Linux always runs kernel threads (kworker/…, ksoftirqd/…)"
    assert all(seconds >= 0 for seconds in used.values())
    assert any(name.startswith(("kworker", "ksoftirqd", "rcu_")) for name in used)
    # This process and its parents are not among them.
    mine = (os.readlink(f"/proc/{os.getpid()}/exe").rsplit("/", 1)[-1])[:15]
    assert mine not in used
