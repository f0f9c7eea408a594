"""A peer's W1 (bench.peers.common.Peer.w1): the queue it filled is settled (on
PostgreSQL: vacuumed and analysed, as autovacuum leaves a table within a minute of a
burst) after the enqueue and before the workers start, untimed. Until run 50 it was not:
procrastinate's fetch, whose cached generic plan sorts every queued job of a never-
analysed table, took 8.6 ms a job, and its W1 figure was that plan's."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.peers.common import Ctx, Peer, Procs

# A worker that starts the stamp jobs at once and stays up until stopped.
WORKER = ("import sys, time\n"
          "for path in sys.argv[1:]:\n"
          "    open(path, 'w').write(repr(time.time()))\n"
          "    time.sleep(0.01)\n"
          "time.sleep(60)\n")


class _Recorder(Peer):
    name = "recorder"
    batch_api = "lists"

    def __init__(self, ctx: Ctx) -> None:
        super().__init__(ctx)
        self.calls: list[str] = []
        self.stamps: list[str] = []

    def reset(self) -> None:
        self.calls.append("reset")

    def enqueue_stamp(self, path: str) -> None:
        self.calls.append("stamp")
        self.stamps.append(path)

    def enqueue_noops(self, count: int, *, batch: bool) -> None:
        self.calls.append("noops")

    def settle(self) -> None:
        self.calls.append("settle")

    def start_workers(self, procs: Procs, k: int, workload: str) -> None:
        self.calls.append("workers")
        procs.start("workers", [sys.executable, "-c", WORKER, *self.stamps])


def test_the_queue_is_settled_after_the_enqueue_and_before_the_workers(tmp_path: Path) -> None:
    peer = _Recorder(Ctx(pg=None, redis=None, tmp=tmp_path))
    row = peer.w1(10, 1, batch=True, timeout=60)
    assert row["status"] == "ok"
    assert peer.calls.index("settle") > max(i for i, c in enumerate(peer.calls)
                                            if c in ("stamp", "noops"))
    assert peer.calls.index("settle") < peer.calls.index("workers")
