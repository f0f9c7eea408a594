"""The shapes of bodies and answers, for the OpenAPI document and request parsing.

Requests are checked here for their JSON shape only (which fields, which JSON types,
integer ranges the database can hold); what the values mean is checked by the Yard and
the store, once, as for the CLI. Answers are built by the records' ``to_json`` and
described here (extra fields allowed: "more fields welcome").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

INT32 = 2**31 - 1
ID_MAX = 2**63 - 1


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


Json = Any
Duration = StrictFloat | StrictInt | StrictStr


# --- requests ---------------------------------------------------------------------------

class JobIn(_In):
    """A job to submit (the fields of ``taskyard submit``)."""

    type: StrictStr = Field(description="Task type name.")
    args: dict[str, Json] | None = Field(default=None, description="Keyword arguments.")
    priority: StrictInt = Field(default=0, ge=-INT32, le=INT32, description="Larger first.")
    run_after: Duration | None = Field(
        default=None, description="Not before: a duration (`2s`, `5m`) or an ISO 8601 time.")
    pools: list[StrictStr] | None = Field(default=None, description="Instead of the type's.")
    locks: list[StrictStr] = Field(default_factory=list, description="Extra locks.")
    timeout: Duration | None = Field(default=None, description="Per attempt, seconds or `5m`.")
    unique_key: StrictStr | None = Field(
        default=None, description="No second job of this type with this key while one has "
        "not ended (or, with `unique_for`, was created that recently).")
    unique_for: Duration | None = Field(
        default=None, description="How long a job holds its unique key after it was "
        "created: seconds or a duration (`1h`).")
    on_duplicate: StrictStr = Field(
        default="existing", description="When the key is held: `existing` answers the "
        "holder, `reject` refuses (409).")


class JobBatchIn(_In):
    """Jobs to submit together: all or none."""

    jobs: list[JobIn] = Field(min_length=1, max_length=1000,
                              description="1 to 1,000 jobs, each as for POST /api/v1/jobs.")


class TaskTypeIn(BaseModel):
    """A task type: its ``name`` and the YAML fields of ``taskyard apply``."""

    model_config = ConfigDict(extra="allow")
    name: StrictStr
    handler: StrictStr = Field(description="`python:MOD:FUNC` or `shell:CMD {arg}`.")


class ScheduleIn(_In):
    """A schedule (the fields of ``taskyard schedule add``)."""

    name: StrictStr
    type: StrictStr
    every: Duration | None = None
    cron: StrictStr | None = None
    args: dict[str, Json] | None = None
    timezone: StrictStr | None = None
    priority: StrictInt = Field(default=0, ge=-INT32, le=INT32)
    catchup: StrictStr | None = Field(default=None, description="one, all or none.")
    catchup_window: Duration | None = Field(
        default=None, description="Missed runs older than this are skipped (`1d`).")
    overlap: StrictStr | None = Field(
        default=None, description="allow, skip or buffer-one: a run due while the last "
        "one has not ended.")
    paused: StrictBool = False
    replace: StrictBool = Field(default=False, description="Redefine an existing one.")


class TokenIn(_In):
    name: StrictStr
    scope: StrictStr = Field(description="read, write or admin.")
    expires: Duration | None = Field(
        default=None, description="Valid for this long (`30d`, seconds); none: until revoked.")


class PruneIn(_In):
    """Retention (``taskyard prune``): what finished longer ago than ``older_than``."""

    older_than: Duration = Field(description="Seconds or a duration such as `30d`.")
    dry_run: StrictBool = Field(default=False, description="Count the first batch only.")


class GraphIn(BaseModel):
    """A graph document: the graph file's JSON form (``routing``, ``tasks``)."""

    model_config = ConfigDict(extra="allow")
    tasks: dict[str, Json] = Field(description="Label → task (type, args, requires, ...).")


def body_of(model: type[BaseModel], *, required: bool = True) -> dict[str, Any]:
    """``openapi_extra`` documenting ``model`` as the JSON body of a route that reads its
    body itself (:func:`taskyard.api.http.jsonio.read_model`); the schema is added to the
    document's components (see ``openapi_document``). ``required=False``: the route
    also takes no body at all."""
    REQUEST_MODELS[model.__name__] = model
    return {"requestBody": {"required": required, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


REQUEST_MODELS: dict[str, type[BaseModel]] = {}


# --- answers ----------------------------------------------------------------------------

class ErrorDetail(_Out):
    status: int
    message: str


class ErrorOut(_Out):
    error: ErrorDetail


class AttemptOut(_Out):
    attempt: int
    state: str
    worker: str | None
    exit_code: int | None
    started_at: str | None
    finished_at: str | None


class StageOut(_Out):
    attempt: int
    name: str
    state: str


class JobOut(_Out):
    id: int
    type: str | None = Field(description="Its task type; null for an approval, a wait or a "
                             "sleep.")
    kind: str = Field(description="task, approval, wait or sleep.")
    state: str
    attempt: int
    args: Json
    result: Json
    exit_code: int | None
    priority: int
    pools: list[str]
    worker: str | None
    graph_id: int | None
    label: str | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    attempts: list[AttemptOut]
    stages: list[StageOut]
    traceparent: str | None = Field(None, description="The W3C trace context it was "
                                    "submitted in (docs/tracing.md), or null.")
    tracestate: str | None = None


class ReasonOut(_Out):
    code: str
    message: str
    job_id: int | None
    detail: str


class JobDetailOut(JobOut):
    why: list[str] = Field(description="Why it is not running yet, in words.")
    explain: list[ReasonOut]
    resolved_args: Json = Field(description="args with finished `$result` markers replaced.")


class JobBatchOut(_Out):
    items: list[JobOut] = Field(description="The jobs, in the order they were given.")


class JobPageOut(_Out):
    items: list[JobOut]
    next: str | None = Field(description="Cursor of the next page (opaque); null at the end.")


class LogsOut(_Out):
    job_id: int
    attempt: int | None
    state: str | None
    stdout: str
    stderr: str


class GraphOut(_Out):
    id: int
    state: str
    routing: str
    created_at: str | None
    finished_at: str | None
    jobs_total: int
    jobs_done: int
    jobs: list[JobOut]
    states: dict[str, int] = Field(description="How many jobs are in each state.")


class GraphListOut(_Out):
    items: list[GraphOut]


class EdgeOut(_Out):
    job_id: int
    requires_id: int
    condition: str


class EdgeListOut(_Out):
    items: list[EdgeOut]
    truncated: bool


class TaskTypeOut(_Out):
    name: str
    handler: str
    pools: list[str]
    cost: int
    timeout: float | None
    retries: int
    retry_delay: float


class TaskTypeListOut(_Out):
    items: list[TaskTypeOut]


class ScheduleOut(_Out):
    name: str
    type: str
    next_run: str | None
    interval: float | None
    cron: str | None
    paused: bool


class ScheduleListOut(_Out):
    items: list[ScheduleOut]


class WorkerOut(_Out):
    name: str
    pools: list[str]
    capacity: int
    state: str
    used: int
    running: int


class WorkerListOut(_Out):
    items: list[WorkerOut]


class PoolOut(_Out):
    name: str
    workers: list[str]
    capacity: int
    used: int
    free: int
    paused: bool = Field(default=False, description="Nothing new is placed in it.")


class PoolListOut(_Out):
    items: list[PoolOut]


class EventOut(_Out):
    id: int
    topic: str
    routing_key: str
    payload: Json
    created_at: str | None


class EventListOut(_Out):
    items: list[EventOut]
    next: int | None = Field(description="`after` for the next call (the last id looked at).")


class TokenOut(_Out):
    name: str
    scope: str
    created_at: str | None
    revoked: bool
    last_used_at: str | None
    expires_at: str | None


class TokenListOut(_Out):
    items: list[TokenOut]


class TokenCreatedOut(TokenOut):
    token: str = Field(description="The secret: shown once, never again.")


class OverviewOut(_Out):
    jobs: dict[str, int]
    endings: dict[str, int]
    window_seconds: float
    workers: int
    capacity: int
    used: int
    graphs: list[GraphOut]


class PruneOut(_Out):
    jobs: int
    graphs: int
    events: int


class HealthOut(_Out):
    status: str
