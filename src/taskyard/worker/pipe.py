"""The Python child's end of its socket to the worker.

The worker's end is a ``multiprocessing.connection.Connection``; the child frames
messages the same way (a 4-byte big-endian signed length — or -1 and an 8-byte length
for a message over 2 GiB — then the bytes) without importing multiprocessing, which
would cost every child ~1.4 MiB of memory.
"""

from __future__ import annotations

import os

# The C pickler alone: the ``pickle`` module around it also loads ``re`` and its own
# pure-Python pickler, ~0.7 MiB per child. Any interpreter without it has ``pickle``.
try:
    from _pickle import dumps, loads
except ImportError:  # pragma: no cover - CPython always builds _pickle
    from pickle import dumps, loads

TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (~1.7 MiB)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Pipe", "dumps", "loads"]  # the child pickles with these too

_LONG_MARK = (-1).to_bytes(4, "big", signed=True)


class Pipe:
    """Blocking message I/O on the file descriptor ``fd`` (a socket)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send_bytes(self, data: bytes) -> None:
        size = len(data)
        header = (size.to_bytes(4, "big", signed=True) if size <= 0x7FFFFFFF
                  else _LONG_MARK + size.to_bytes(8, "big"))
        view = memoryview(header + data)
        while view:
            view = view[os.write(self._fd, view):]

    def recv_bytes(self) -> bytes:
        """The next message; EOFError once the worker's end is closed."""
        size = int.from_bytes(self._read(4), "big", signed=True)
        if size == -1:
            size = int.from_bytes(self._read(8), "big")
        return self._read(size)

    def send(self, obj: Any) -> None:
        self.send_bytes(dumps(obj, -1))  # -1: the highest protocol

    def recv(self) -> Any:
        return loads(self.recv_bytes())

    def _read(self, size: int) -> bytes:
        chunks: list[bytes] = []
        while size:
            chunk = os.read(self._fd, size)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)
