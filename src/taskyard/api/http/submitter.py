"""Group commit of the single submits a server process receives at once.

``POST /api/v1/jobs`` hands its job to :class:`Submitter`: while one group of jobs is
being written (on a thread), the jobs that arrive meanwhile wait, and go in together as
the next group — one thread hop, one transaction and one read of the answers for the
lot, instead of one each (the profile of issue 36: per request, the commit, the
re-read and the hops took most of the time the store took). A group is
:meth:`Yard.submit_many` given jobs alone, the path of ``POST /api/v1/jobs/batch``.
Alone (no other request waiting), a job takes :meth:`Yard.submit`'s path, as before.

A group is all or nothing, the requests in it are not: when a group is refused (one
bad job, a unique key held with ``on_duplicate: reject``), each of its jobs is
submitted alone, so that each request gets its own answer and a bad job changes
nothing for its neighbours.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextvars import Context
from typing import Any

from anyio import to_thread

from taskyard.api.yard import Yard
from taskyard.model.errors import NotFound
from taskyard.store.reads.job_pages import jobs_by_id

GROUP_MAX = 1000
"""Jobs written in one group at most (the batch route's limit)."""
Outcome = dict[str, Any] | Exception


class Submitter:
    """Submits jobs (``POST /api/v1/jobs`` bodies as mappings) in groups; answers each
    with its job as ``job show --json`` gives it."""

    def __init__(self, yard: Yard, *, writers: int = 1) -> None:
        self.yard = yard
        self.writers = writers
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[Outcome]]] = []
        self._writing = 0

    async def submit(self, job: dict[str, Any]) -> dict[str, Any]:
        """The submitted job; StoreError (InvalidInput, Conflict…) as a lone submit."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting.append((job, future))
        if self._writing < self.writers:
            self._writing += 1
            # In a context of its own: not the first request's (its span would be
            # current for every job of the group; each carries its own, explicitly).
            asyncio.get_running_loop().create_task(self._write(), context=Context())
        outcome = await future
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def _write(self) -> None:
        try:
            while self._waiting:
                group = self._waiting[:GROUP_MAX]
                del self._waiting[:GROUP_MAX]
                try:
                    outcomes = await to_thread.run_sync(
                        self.write_group, [job for job, _ in group])
                except BaseException as exc:  # not the jobs' fault: each request says so
                    for _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for (_, future), outcome in zip(group, outcomes, strict=True):
                    if not future.done():
                        future.set_result(outcome)
        finally:
            self._writing -= 1

    def write_group(self, jobs: Sequence[dict[str, Any]]) -> list[Outcome]:
        """Submit ``jobs`` (blocking): together when there are several and all are
        accepted, else each alone; each one's job, or the error that refused it (a
        failure of the group, whatever it is, is each job's own once alone)."""
        ids: list[int | Exception]
        if len(jobs) == 1:
            ids = [self._alone(jobs[0])]
        else:
            try:
                ids = list(self.yard.submit_many(list(jobs)))
            except Exception:  # each job alone says whose failure it was
                ids = [self._alone(job) for job in jobs]
        found = jobs_by_id(self.yard.store, [i for i in ids if isinstance(i, int)])
        return [i if isinstance(i, Exception) else
                found[i].to_json() if i in found else NotFound(f"no job {i}")
                for i in ids]

    def _alone(self, job: dict[str, Any]) -> int | Exception:
        options = {k: v for k, v in job.items() if k not in ("type", "args")}
        try:
            return self.yard.submit(job["type"], job.get("args") or {}, **options)
        except Exception as exc:  # this request's answer (4xx, or 500)
            return exc
