"""Answers of the operator's routes (timeline, search, bulk actions, history, live
logs): described for the OpenAPI document, extra fields allowed as elsewhere."""

from __future__ import annotations

from pydantic import Field

from taskyard.api.http.schemas import JobOut, _Out


class TimelineItemOut(_Out):
    id: int
    label: str | None
    type: str
    state: str
    attempts: int
    requires: list[int] = Field(description="Parents inside the graph.")
    ready_at: str = Field(description="When its last parent ended (its creation without one).")
    started_at: str | None = Field(description="Its first attempt's start.")
    ended_at: str | None = Field(description="Its end; the server's now while it runs.")
    running: bool
    duration: float | None = Field(description="Seconds it ran (so far).")
    wait: float | None = Field(description="Seconds from ready to started.")
    critical: bool = Field(description="On the critical path.")


class TimelineOut(_Out):
    graph_id: int
    now: str
    begin: str | None
    finish: str | None
    span: float | None = Field(description="Seconds from the first creation to the last end.")
    critical: list[int] = Field(description="The critical path's job ids, first job first.")
    critical_seconds: float = Field(description="Seconds the critical path's jobs ran.")
    items: list[TimelineItemOut]
    truncated: bool


class JobSearchOut(_Out):
    items: list[JobOut]
    next: str | None = Field(description="Pass as `cursor` for the next page (null: the end).")
    complete: bool = Field(description="False when the page reached the bound on the rows "
                           "it examines (filters no index serves) before it was full: "
                           "`next` goes on from there.")


class HistoryPointOut(_Out):
    t: str = Field(description="The bucket's start.")
    arrived: int = Field(description="Jobs that became pending.")
    started: int = Field(description="Attempts started.")
    succeeded: int
    failed: int
    errored: int = Field(description="Attempts ended in error or that lost their worker.")
    canceled: int
    finished: int = Field(description="Jobs that ended for good.")
    wait_p50: float | None = Field(description="Submit→start wait of first attempts, "
                                   "seconds (interpolated in its histogram bucket).")
    wait_p95: float | None
    cycle_p50: float | None = Field(description="Creation → end of the jobs that ended.")
    cycle_p95: float | None
    depth: float | None = Field(description="Pending jobs, mean of the readings.")
    depth_max: int | None


class HistoryOut(_Out):
    window: str
    bucket_seconds: int
    now: str
    pool: str | None
    type: str | None
    points: list[HistoryPointOut]
    totals: dict[str, int]
    pools: list[str] = Field(description="Pools with history.")
    types: list[str] = Field(description="Task types with history.")


class BulkOut(_Out):
    action: str
    dry_run: bool
    matched: int = Field(description="Jobs found in the states the action applies to.")
    changed: int
    skipped: int = Field(description="Found, but their state changed before their turn.")
    up_to: int | None = Field(description="The newest job of the set: send it back as "
                                          "`up_to` to act on what was counted.")
    more: bool = Field(description="More jobs match than one call acts on (10,000).")


class DrainOut(_Out):
    id: int
    name: str
    draining: bool
