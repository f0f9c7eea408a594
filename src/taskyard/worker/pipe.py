"""The Python child's end of its socket to the worker.

The worker's end is a ``multiprocessing.connection.Connection``; the child frames
messages the same way (a 4-byte big-endian signed length — or -1 and an 8-byte length
for a message over 2 GiB — then the bytes) without importing multiprocessing, which
would cost every child ~1.4 MiB of memory.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

_SHORT = struct.Struct("!i")
_LONG = struct.Struct("!Q")


class Pipe:
    """Blocking message I/O on the file descriptor ``fd`` (a socket)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send_bytes(self, data: bytes) -> None:
        size = len(data)
        header = (_SHORT.pack(size) if size <= 0x7FFFFFFF
                  else _SHORT.pack(-1) + _LONG.pack(size))
        view = memoryview(header + data)
        while view:
            view = view[os.write(self._fd, view):]

    def recv_bytes(self) -> bytes:
        """The next message; EOFError once the worker's end is closed."""
        (size,) = _SHORT.unpack(self._read(_SHORT.size))
        if size == -1:
            (size,) = _LONG.unpack(self._read(_LONG.size))
        return self._read(size)

    def send(self, obj: Any) -> None:
        self.send_bytes(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))

    def recv(self) -> Any:
        return pickle.loads(self.recv_bytes())

    def _read(self, size: int) -> bytes:
        chunks: list[bytes] = []
        while size:
            chunk = os.read(self._fd, size)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)
