"""``create_app``: the ASGI application of ``taskyard serve`` (FastAPI).

One Yard per application. Reads are plain functions, which FastAPI runs in a bounded
threadpool: they call the Yard and the store, which block, like the CLI does. Routes
that take a body are asynchronous: they read and parse it (a large one on a thread),
then call the store on the threadpool; submits are written in groups
(:mod:`taskyard.api.http.submitter`). Before any route, the guard
(:mod:`taskyard.api.http.guard`) checks the host, the token, the content type and the
body's size.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response

from taskyard.api.http import errors, static
from taskyard.api.http.auth import BEARER, READ
from taskyard.api.http.context import Settings
from taskyard.api.http.context import errors as error_responses
from taskyard.api.http.feed import EventFeed
from taskyard.api.http.guard import BodyLimits, Guard, trusted_hosts
from taskyard.api.http.jsonio import answer
from taskyard.api.http.metrics import Metrics
from taskyard.api.http.routes_backfill import router as backfills
from taskyard.api.http.routes_catalog import router as catalog
from taskyard.api.http.routes_cluster import router as cluster
from taskyard.api.http.routes_events import router as events
from taskyard.api.http.routes_graphs import router as graphs
from taskyard.api.http.routes_jobs import router as jobs
from taskyard.api.http.routes_ops import router as ops
from taskyard.api.http.routes_pools import router as pools
from taskyard.api.http.routes_tokens import router as tokens
from taskyard.api.http.routes_waits import router as waits
from taskyard.api.http.schemas import REQUEST_MODELS
from taskyard.api.http.submitter import Submitter
from taskyard.api.http.tokens import AuthThrottle, TokenChecker
from taskyard.api.yard import Yard

OPENAPI_PATH = "/api/v1/openapi.json"
DESCRIPTION = """taskyard's REST API. Every path but `/healthz` needs
`Authorization: Bearer TOKEN` (`taskyard token create --name N --scope read|write|admin`).
Errors are `{"error": {"status": N, "message": "..."}}`: 400 for a request that does not
follow this schema, 422 for one taskyard refuses (nothing changed). Bodies are JSON
(`Content-Type: application/json`, else 415), each route with its own size limit (413).
"""
JOB_ROOM = 64 * 1024
"""Bytes of a job's body beyond its args (the other fields, JSON's escapes)."""


def create_app(yard: Yard, *, settings: Settings | None = None,
               feed: EventFeed | None = None) -> FastAPI:
    """The application serving ``yard``: REST under ``/api/v1``, the event stream,
    ``/metrics``, ``/healthz`` and the dashboard at ``/``."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = settings.threads
        # No gc.freeze() here: the heap is the process's, and only the process's owner
        # knows that what it holds now lives as long as it does (HttpServer.run, `up`).
        yield
        app.state.feed.close()

    # No redirect to the path with(out) a trailing slash: it would echo the Host header.
    app = FastAPI(title="taskyard", version="1", description=DESCRIPTION, docs_url=None,
                  redoc_url=None, openapi_url=None, lifespan=lifespan, redirect_slashes=False,
                  **_telemetry())
    app.state.yard = yard
    app.state.settings = settings
    app.state.feed = feed or EventFeed(yard.store)
    app.state.tokens = TokenChecker(yard.store, ttl=settings.token_ttl)
    app.state.metrics = Metrics(yard)
    # Groups written at once: SQLite writes one transaction at a time (a second group
    # would wait for the first); PostgreSQL's round trips overlap (bench.http: 1,714 ->
    # 1,868 submits/s with 2, fewer with more: the groups shrink).
    app.state.submitter = Submitter(
        yard, writers=1 if yard.store.driver.writes_one_at_a_time else 2)
    errors.install(app)
    for router in (ops, jobs, waits, graphs, catalog, backfills, cluster, pools, events,
                   tokens):
        app.include_router(router)
    app.include_router(_meta_router(app))
    static.install(app)
    job = yard.store.limits.max_args_bytes + JOB_ROOM
    app.add_middleware(
        Guard, tokens=app.state.tokens, throttle=AuthThrottle(settings.auth_failures),
        limits=BodyLimits(graph=settings.max_body, batch=settings.batch_body,
                          apply=settings.apply_body, job=job),
        hosts=trusted_hosts(list(settings.trusted_hosts)))
    return app


def _telemetry() -> dict[str, Any]:
    """FastAPI's OpenTelemetry (FastAPI 0.16x), as configured when the app is built: off
    when no tracer provider is set (FastAPI would look the providers up on every request:
    ~5 % of a submit's CPU, for nothing)."""
    try:
        from fastapi.telemetry import TelemetryConfig  # noqa: PLC0415, F401
        from opentelemetry import trace  # noqa: PLC0415 - FastAPI's own dependency
    except ImportError:  # an older FastAPI: no telemetry of its own
        return {}
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    return {}


def _meta_router(app: FastAPI) -> APIRouter:
    router = APIRouter()

    @router.get(OPENAPI_PATH, dependencies=[READ], responses=error_responses(),
                tags=["meta"], summary="This API's OpenAPI document")
    def openapi() -> Response:
        return answer(openapi_document(app))

    @router.get("/metrics", dependencies=[READ], tags=["meta"], responses={
        **error_responses(), 200: {"description": "Prometheus text exposition",
                                   "content": {"text/plain": {}}}},
        summary="Prometheus metrics (names start with taskyard_)")
    def metrics() -> Response:
        metrics: Metrics = app.state.metrics
        return Response(metrics.render(),
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    return router


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, built once: every operation requires the bearer token but
    ``/healthz``, which the security list says too."""
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version,
                          description=app.description, routes=app.routes)
        components = doc.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        # Not FastAPI's 422 shape: its validation errors are answered 400, in ours.
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        for name, model in REQUEST_MODELS.items():  # bodies the routes read themselves
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[name] = schema
        components["securitySchemes"] = {BEARER: {
            "type": "http", "scheme": "bearer",
            "description": "A token from `taskyard token create`."}}
        for route, path in doc.get("paths", {}).items():
            for operation in path.values():
                if _fastapi_422(operation):
                    del operation["responses"]["422"]
                if route != "/healthz":
                    operation["security"] = [{BEARER: []}]
        app.openapi_schema = doc
    return app.openapi_schema


def _fastapi_422(operation: dict[str, Any]) -> bool:
    ref = (operation.get("responses", {}).get("422", {}).get("content", {})
           .get("application/json", {}).get("schema", {}).get("$ref", ""))
    return str(ref).endswith("/HTTPValidationError")
