"""Following a job's output as it is written: what ``taskyard job logs --follow`` prints
and the API's log stream sends (``GET /api/v1/jobs/{id}/logs/stream``).

A :class:`LogFollower` is asked again and again (a few times a second) what is new: the
chunks its attempt wrote since the last step, the attempt's end, the job's next attempt
(unless one attempt was asked for), the job's end. An attempt that wrote no chunk (one
that ran in a pipeline of short jobs, or before live output) gives its tails at its end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from taskyard.core.states import TERMINAL, AttemptState
from taskyard.model.errors import NotFound
from taskyard.store import Store
from taskyard.store.transitions.logs import LogChunk, read_logs

ENDED = frozenset({AttemptState.SUCCEEDED, AttemptState.FAILED, AttemptState.ERROR,
                   AttemptState.CANCELED, AttemptState.LOST})
TAILS = 2**31 - 1
"""The seq of the chunks made of an attempt's tails: after them, nothing of it is left."""
BATCH = 500


@dataclass
class Step:
    """What is new since the last step."""

    chunks: list[LogChunk] = field(default_factory=list)
    began: int | None = None
    """An attempt whose output follows now."""
    ended: tuple[int, str] | None = None
    """(attempt, its state): that attempt ended and all it wrote was given."""
    done: str | None = None
    """The follow is over: the job's state (or the one attempt asked for ended)."""
    more: bool = False
    """More is there already: ask again at once."""


class LogFollower:
    """Follows job ``job_id``'s output: attempt ``attempt`` only, or from the latest at
    the start on; ``after`` (attempt, seq): resume after that chunk."""

    def __init__(self, store: Store, job_id: int, *, attempt: int | None = None,
                 after: tuple[int, int] | None = None) -> None:
        self.store = store
        self.job_id = job_id
        self.only = attempt
        self.attempt = attempt if after is None else after[0]
        self.seq = 0 if after is None else after[1]
        self._wrote = self.seq > 0

    def step(self) -> Step:
        """NotFound for a job that does not exist (or an attempt number past its last,
        once the job ended)."""
        step = Step()
        if self.attempt is None:
            first = read_logs(self.store, self.job_id, 1, limit=0)
            if first is None:
                raise NotFound(f"no job {self.job_id}")
            if first.latest == 0:  # not started yet
                if first.job_state in TERMINAL:
                    step.done = first.job_state
                return step
            self.attempt = first.latest
            step.began = self.attempt
        read = read_logs(self.store, self.job_id, self.attempt, after=self.seq, limit=BATCH)
        if read is None:
            raise NotFound(f"no job {self.job_id}")
        if read.state is None:  # that attempt has not begun (a retry to come)
            if read.job_state in TERMINAL and read.latest < self.attempt:
                if self.only is not None:
                    raise NotFound(f"job {self.job_id} has no attempt {self.attempt} "
                                   f"(it has {read.latest})")
                step.done = read.job_state
            return step
        step.chunks = read.chunks
        if read.chunks:
            self.seq = read.chunks[-1].seq
            self._wrote = True
        step.more = len(read.chunks) == BATCH
        if step.more or read.state not in ENDED:
            return step
        if not self._wrote and self.seq < TAILS:
            step.chunks = self._tails()
            self.seq = TAILS
        step.ended = (self.attempt, read.state)
        if self.only is not None:
            step.done = read.state
        elif read.latest > self.attempt:
            self.attempt += 1
            self.seq, self._wrote = 0, False
            step.began, step.more = self.attempt, True
        elif read.job_state in TERMINAL:
            step.done = read.job_state
        return step

    def _tails(self) -> list[LogChunk]:
        assert self.attempt is not None
        job = self.store.jobs.get(self.job_id)
        found = next((a for a in job.attempts if a.attempt == self.attempt), None) if job else None
        if found is None:
            return []
        attempt = self.attempt
        return [LogChunk(self.job_id, attempt, TAILS, stream, len(text.encode()), text)
                for stream, text in (("stdout", found.stdout_tail or ""),
                                     ("stderr", found.stderr_tail or "")) if text]
