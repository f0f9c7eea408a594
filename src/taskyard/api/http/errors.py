"""One error shape for every failure: ``{"error": {"status": N, "message": "..."}}``.

Status codes, decided once here:

- 400: the request does not follow the API's schema (not JSON, a missing field, a value
  of the wrong JSON type, an unknown query value); nothing was looked at.
- 401: no token, an unknown token or a revoked one. 403: the token's scope is too low.
- 404: no such job, graph, task type, schedule or token (or path).
- 409: the transition does not apply now (cancel a finished job, a token name in use).
- 413: the body is larger than the server's limit.
- 422: well-formed, but taskyard refuses it: the store's or the Yard's validation
  (unknown task type, a cycle in a graph, bad args, a bad duration); nothing changed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from taskyard.core.durations import DurationError
from taskyard.model.errors import Conflict, InvalidInput, NotFound, StoreError

log = logging.getLogger("taskyard.http")


class ApiError(Exception):
    """A failure the API answers with ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def error_response(status: int, message: str,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "message": " ".join(message.split())}},
                        status_code=status, headers=dict(headers or {}))


def store_status(exc: StoreError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    return 422  # InvalidInput and any other refusal of the content


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body",)] or ["body"]
    if loc and loc[0] in ("query", "path", "header"):
        parts = [str(p) for p in loc[1:]]
    return ".".join(parts)


def validation_message(exc: RequestValidationError) -> str:
    """The first schema error as one line naming the field."""
    return first_error(exc.errors())


def first_error(errors: Sequence[Any]) -> str:
    """The first of pydantic's errors as one line naming the field."""
    if not errors:
        return "invalid request"
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    if first.get("type") == "json_invalid":
        return f"body is not valid JSON: {first.get('ctx', {}).get('error', first['msg'])}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{_where(loc) or 'body'}: {first.get('msg', 'invalid')}{more}"


def install(app: FastAPI) -> None:
    """Map every failure to the one shape, in one place."""

    async def on_api_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.message, exc.headers)

    async def on_store_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StoreError)
        return error_response(store_status(exc), str(exc))

    async def on_duration_error(_: Request, exc: Exception) -> JSONResponse:
        return error_response(422, str(exc))

    async def on_validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(400, validation_message(exc))

    async def on_http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return error_response(exc.status_code, str(exc.detail), exc.headers)

    async def on_client_gone(request: Request, _: Exception) -> JSONResponse:
        # The client left before its body was whole, or the server dropped it (408): no
        # one reads this answer, and it is no server error (a traceback each would let
        # any writer fill the log).
        log.info("event=http-client-gone method=%s path=%s", request.method, request.url.path)
        return error_response(400, "body: the client left before sending it whole")

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("event=http-error method=%s path=%s error=%s: %s", request.method,
                  request.url.path, type(exc).__name__, " ".join(str(exc).split())[:300],
                  exc_info=exc)
        return error_response(500, f"internal error ({type(exc).__name__}); see the server log")

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(StoreError, on_store_error)
    for kind in (InvalidInput, NotFound, Conflict):
        app.add_exception_handler(kind, on_store_error)
    app.add_exception_handler(DurationError, on_duration_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(ClientDisconnect, on_client_gone)
    app.add_exception_handler(Exception, on_unexpected)
