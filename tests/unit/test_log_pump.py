"""The worker's log pump (worker/log_pump.py) on real files: chunks in order per attempt,
a cut UTF-8 character waits for its end, the bound skips what would fall out, and an
attempt's last words survive a failed write without reading its (reused) files again."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from polling import wait_for
from taskyard.store.transitions.logs import LogChunk
from taskyard.worker.log_pump import LogPump


class Sink:
    def __init__(self) -> None:
        self.got: list[LogChunk] = []
        self.fail = 0
        self.refuse: set[tuple[int, int]] = set()

    def __call__(self, chunks: Sequence[LogChunk]) -> set[tuple[int, int]]:
        if self.fail:
            self.fail -= 1
            raise OSError("database away")
        self.got.extend(chunks)
        return self.refuse & {(c.job_id, c.attempt) for c in chunks}


def _files(tmp_path: Path) -> tuple[Path, Path]:
    out, err = tmp_path / "out", tmp_path / "err"
    out.write_bytes(b"")
    err.write_bytes(b"")
    return out, err


def test_rounds_read_new_bytes_in_order_and_wait_for_cut_characters(tmp_path: Path) -> None:
    sink = Sink()
    pump = LogPump(sink, on_refused=lambda key: None, limit=1000)
    out, err = _files(tmp_path)
    ended = pump.watch((1, 1), str(out), str(err))
    out.write_bytes("héllo\n".encode()[:2])  # "h" and half of "é"
    pump.round()
    with out.open("ab") as fh:
        fh.write("héllo\n".encode()[2:])
    err.write_bytes(b"oops\n")
    pump.round()
    ended()
    assert [(c.seq, c.stream, c.data, c.upto) for c in sink.got] == [
        (1, "stdout", "h", 2), (2, "stdout", "éllo\n", 7), (3, "stderr", "oops\n", 5)]


def test_the_bound_skips_bytes_that_would_fall_out(tmp_path: Path) -> None:
    sink = Sink()
    pump = LogPump(sink, on_refused=lambda key: None, limit=10)
    out, err = _files(tmp_path)
    pump.watch((1, 1), str(out), str(err))
    out.write_bytes(b"0123456789abcdefghij")
    pump.round()
    assert [(c.data, c.upto) for c in sink.got] == [("abcdefghij", 20)]


def test_last_words_survive_a_failed_write_and_a_reused_file(tmp_path: Path) -> None:
    sink = Sink()
    refused: list[tuple[int, int]] = []
    pump = LogPump(sink, on_refused=refused.append, limit=1000)
    out, err = _files(tmp_path)
    ended = pump.watch((1, 1), str(out), str(err))
    out.write_bytes(b"last words\n")
    sink.fail = 1
    ended()  # the write fails: kept for the next round
    assert sink.got == []
    out.write_bytes(b"the next job\n")  # the child's file, reused
    pump.watch((2, 1), str(out), str(err))
    sink.refuse = {(2, 1)}
    pump.round()
    assert [(c.job_id, c.data) for c in sink.got] == [(1, "last words\n"), (2, "the next job\n")]
    assert refused == [(2, 1)]
    pump.round()  # both forgotten: nothing more
    assert len(sink.got) == 2


def test_an_idle_pump_sleeps_until_an_attempt_is_watched_or_it_is_woken(
        tmp_path: Path) -> None:
    # An idle worker's pump read nothing 5 times a second: now it makes no round
    # while it watches nothing, and wakes for an attempt, or for its stop.
    sink = Sink()
    pump = LogPump(sink, on_refused=lambda key: None, interval=0.01)
    rounds: list[int] = []
    real_round = pump.round
    pump.round = lambda: (rounds.append(1), real_round())[1]  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=pump.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(0.3)  # 30 intervals: an idle pump makes no round however slow the box
    assert rounds == []
    out, err = _files(tmp_path)
    ended = pump.watch((1, 1), str(out), str(err))
    out.write_bytes(b"hi\n")
    wait_for("the line written", lambda: sink.got)
    ended()
    stop.set()
    pump.wake()
    thread.join(60)
    assert not thread.is_alive()
    assert [c.data for c in sink.got] == ["hi\n"]
