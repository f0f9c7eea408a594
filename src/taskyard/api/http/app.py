"""``create_app``: the ASGI application of ``taskyard serve`` (FastAPI).

One Yard per application. Handlers are plain functions, which FastAPI runs in a bounded
threadpool: they call the Yard and the store, which block, like the CLI does. The event
stream is the one asynchronous route (it waits without holding a thread).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response

from taskyard.api.http import errors, static
from taskyard.api.http.auth import READ
from taskyard.api.http.body_limit import BodyLimit
from taskyard.api.http.context import Settings, answer
from taskyard.api.http.context import errors as error_responses
from taskyard.api.http.feed import EventFeed
from taskyard.api.http.metrics import Metrics
from taskyard.api.http.routes_catalog import router as catalog
from taskyard.api.http.routes_cluster import router as cluster
from taskyard.api.http.routes_events import router as events
from taskyard.api.http.routes_graphs import router as graphs
from taskyard.api.http.routes_jobs import router as jobs
from taskyard.api.http.routes_ops import router as ops
from taskyard.api.http.routes_tokens import router as tokens
from taskyard.api.http.tokens import TokenChecker
from taskyard.api.yard import Yard

OPENAPI_PATH = "/api/v1/openapi.json"
DESCRIPTION = """taskyard's REST API. Every path but `/healthz` needs
`Authorization: Bearer TOKEN` (`taskyard token create --name N --scope read|write|admin`).
Errors are `{"error": {"status": N, "message": "..."}}`: 400 for a request that does not
follow this schema, 422 for one taskyard refuses (nothing changed)."""


def create_app(yard: Yard, *, settings: Settings | None = None,
               feed: EventFeed | None = None) -> FastAPI:
    """The application serving ``yard``: REST under ``/api/v1``, the event stream,
    ``/metrics``, ``/healthz`` and the dashboard at ``/``."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = settings.threads
        yield
        app.state.feed.close()

    app = FastAPI(title="taskyard", version="1", description=DESCRIPTION, docs_url=None,
                  redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.yard = yard
    app.state.settings = settings
    app.state.feed = feed or EventFeed(yard.store)
    app.state.tokens = TokenChecker(yard.store)
    app.state.metrics = Metrics(yard)
    errors.install(app)
    for router in (ops, jobs, graphs, catalog, cluster, events, tokens):
        app.include_router(router)
    app.include_router(_meta_router(app))
    static.install(app)
    app.add_middleware(BodyLimit, limit=settings.max_body)
    return app


def _meta_router(app: FastAPI) -> APIRouter:
    router = APIRouter()

    @router.get(OPENAPI_PATH, dependencies=[READ], responses=error_responses(),
                tags=["meta"], summary="This API's OpenAPI document")
    def openapi() -> JSONResponse:
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
        # Not FastAPI's 422 shape: its validation errors are answered 400, in ours.
        doc.get("components", {}).get("schemas", {}).pop("HTTPValidationError", None)
        doc.get("components", {}).get("schemas", {}).pop("ValidationError", None)
        for path in doc.get("paths", {}).values():
            for operation in path.values():
                if _fastapi_422(operation):
                    del operation["responses"]["422"]
        app.openapi_schema = doc
    return app.openapi_schema


def _fastapi_422(operation: dict[str, Any]) -> bool:
    ref = (operation.get("responses", {}).get("422", {}).get("content", {})
           .get("application/json", {}).get("schema", {}).get("$ref", ""))
    return str(ref).endswith("/HTTPValidationError")
