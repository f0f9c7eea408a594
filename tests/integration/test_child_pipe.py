"""The Python child's pipe (taskyard.worker.pipe) speaks multiprocessing.connection's
framing: the worker's end is a Connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

import pytest

from taskyard.worker.pipe import Pipe

BIG = bytes(range(256)) * 4096  # 1 MiB: more than a socket buffer holds at once


def _beside(send: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_messages_cross_both_ways_whole() -> None:
    ours, theirs = socket.socketpair()
    worker, child = Connection(ours.detach()), Pipe(theirs.fileno())
    try:
        sent = _beside(lambda: [worker.send_bytes(b""), worker.send_bytes(BIG),
                                worker.send({"accepted": True})])
        assert child.recv_bytes() == b""
        assert child.recv_bytes() == BIG
        assert child.recv() == {"accepted": True}
        sent.join()
        sent = _beside(lambda: [child.send_bytes(BIG), child.send({"state": "succeeded"})])
        assert worker.recv_bytes() == BIG
        assert worker.recv() == {"state": "succeeded"}
        sent.join()
    finally:
        worker.close()
        theirs.close()


def test_the_worker_gone_is_eof() -> None:
    ours, theirs = socket.socketpair()
    worker, child = Connection(ours.detach()), Pipe(theirs.fileno())
    worker.send_bytes(b"last")
    worker.close()
    try:
        assert child.recv_bytes() == b"last"
        with pytest.raises(EOFError):
            child.recv_bytes()
    finally:
        theirs.close()
