"""Live output: the worker reads what its running attempts write to their stdout and
stderr files, a few times a second, and hands it to a sink (the database, fenced by
attempt: :func:`taskyard.store.transitions.logs.append_logs`) — so ``job logs --follow``,
the API's log stream and the job page see it within a second, and a canceled or fenced
attempt keeps what it wrote until then (its last words are read once its process ended).

One thread for every attempt of the worker: each round reads the new bytes of each file
(at most ``limit`` of a stream: what falls out of the kept tail is skipped, not read),
decodes them as UTF-8 (a character cut between two reads waits for the next one), and
writes the round's chunks in one call. A chunk the sink could not take (the database is
away) is kept, up to ``limit`` a stream, for the next round.
"""

from __future__ import annotations

import codecs
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from taskyard.store.transitions.logs import LogChunk

log = logging.getLogger("taskyard.worker")
Key = tuple[int, int]
LogSink = Callable[[Sequence[LogChunk]], set[Key]]
"""Writes chunks; returns the attempts refused (fenced)."""
INTERVAL = 0.2
"""Seconds between two reads of the files (the delay a line may wait in the worker)."""
LIMIT = 1 << 20
"""Bytes of each stream an attempt keeps (its newest)."""


@dataclass
class _Stream:
    name: str
    path: str
    offset: int = 0
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))


@dataclass
class _Source:
    key: Key
    streams: list[_Stream]
    seq: int = 0
    unsent: list[LogChunk] = field(default_factory=list)
    ended: bool = False
    """Its process ended and its files were read to the end: only ``unsent`` is left."""


class LogPump:
    """Reads the output files of the attempts it watches (see the module docstring)."""

    def __init__(self, sink: LogSink, *, on_refused: Callable[[Key], None],
                 interval: float = INTERVAL, limit: int = LIMIT) -> None:
        self.sink = sink
        self.on_refused = on_refused
        self.interval = interval
        self.limit = limit
        self._sources: dict[Key, _Source] = {}
        self._lock = threading.Lock()
        """Held while a round reads and writes: a finish waits for the round under way,
        so that an attempt's chunks are written in order."""
        self._watching = threading.Event()
        """Set while an attempt is watched (or to end :meth:`run`): with none the thread
        sleeps on it, not in rounds — an idle worker's pump woke 5 times a second, for
        nothing (an idle fleet of 200 workers: 1,000 wake-ups a second)."""
        self.stats = {"chunks": 0, "bytes": 0, "writes": 0, "refused": 0}

    def watch(self, key: Key, stdout: str, stderr: str) -> Callable[[], None]:
        """Follow the files of attempt ``key`` from their start; returns what to call
        once its process ended (:meth:`finish`)."""
        with self._lock:
            self._sources[key] = _Source(key, [_Stream("stdout", stdout),
                                               _Stream("stderr", stderr)])
            self._watching.set()
        return lambda: self.finish(key)

    def finish(self, key: Key) -> None:
        """Read what is left of attempt ``key`` and write it, then forget it (if the
        write fails, the next rounds try again: its files may be reused meanwhile, so
        they are not read again)."""
        with self._lock:
            source = self._sources.get(key)
            if source is not None:
                chunks = self._read([source])
                source.ended = True
                if chunks:
                    self._write(chunks)
                if not source.unsent:
                    self._sources.pop(key, None)

    def run(self, stop: threading.Event) -> None:
        """Rounds every ``interval`` seconds while an attempt is watched, until ``stop``
        (then call :meth:`wake`: with nothing watched the thread sleeps until woken)."""
        while not stop.is_set():
            if not self._watching.is_set():
                self._watching.wait()
                continue
            if stop.wait(self.interval):
                return
            self.round()
            with self._lock:
                if not self._sources:
                    self._watching.clear()

    def wake(self) -> None:
        """Wake :meth:`run` (to see its ``stop``)."""
        self._watching.set()

    def round(self) -> None:
        """Read every attempt watched, write what they wrote."""
        with self._lock:
            sources = list(self._sources.values())
            if sources:
                self._write(self._read(sources))

    def _read(self, sources: Sequence[_Source]) -> list[LogChunk]:
        chunks: list[LogChunk] = []
        for source in sources:
            for stream in [] if source.ended else source.streams:
                data = self._new_bytes(stream)
                if data:
                    source.seq += 1
                    source.unsent.append(LogChunk(*source.key, source.seq, stream.name,
                                                  stream.offset, data))
            if len(source.unsent) > 1 and sum(len(c.data) for c in source.unsent) > 2 * self.limit:
                source.unsent = source.unsent[-2:]  # the sink is away: keep the newest
            chunks.extend(source.unsent)
        return chunks

    def _new_bytes(self, stream: _Stream) -> str:
        try:
            size = os.stat(stream.path).st_size
        except OSError:
            return ""
        if size < stream.offset:  # truncated (a reused file): start again
            stream.offset = 0
            stream.decoder.reset()
        if size - stream.offset > self.limit:  # beyond the kept tail: skipped
            stream.offset = size - self.limit
            stream.decoder.reset()
        if size == stream.offset:
            return ""
        try:
            with open(stream.path, "rb") as fh:
                fh.seek(stream.offset)
                raw = fh.read(size - stream.offset)
        except OSError:
            return ""
        stream.offset += len(raw)
        return stream.decoder.decode(raw)

    def _write(self, chunks: list[LogChunk]) -> None:
        if not chunks:
            return
        try:
            refused = self.sink(chunks)
        except Exception as exc:  # kept for the next round (see _read)
            log.warning("event=logs-write-failed chunks=%d error=%s", len(chunks),
                        " ".join(str(exc).split())[:200])
            return
        self.stats["writes"] += 1
        self.stats["chunks"] += len(chunks)
        self.stats["bytes"] += sum(len(c.data) for c in chunks)
        sent = {(c.job_id, c.attempt) for c in chunks}
        for key in sent:
            source = self._sources.get(key)
            if source is not None:
                source.unsent = []
                if source.ended:
                    del self._sources[key]
        for key in refused:
            self.stats["refused"] += 1
            self._sources.pop(key, None)
            self.on_refused(key)
