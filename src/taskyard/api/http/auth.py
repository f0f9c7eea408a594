"""Deny by default: the guard (:mod:`taskyard.api.http.guard`) lets no request under
``/api/`` or ``/metrics`` through without a live token, and every route but
``/healthz`` depends on :func:`require` for its scope.

``read`` tokens may GET; ``write`` tokens may also submit, cancel and retry; ``admin``
tokens may also change task types, schedules and tokens. A missing, unknown, revoked
or expired token is 401 (with ``WWW-Authenticate: Bearer``), a live token below the
scope 403.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, Request

from taskyard.api.http.errors import ApiError
from taskyard.api.http.guard import TOKEN_KEY
from taskyard.api.http.tokens import scope_allows
from taskyard.store.transitions.tokens import TokenRecord

BEARER = "HTTPBearer"
"""The OpenAPI security scheme every operation but ``/healthz`` requires."""


def require(scope: str) -> Callable[[Request], Awaitable[TokenRecord]]:
    """A dependency that lets a request through with a live token of at least ``scope``
    (asynchronous: it reads what the guard found, with no thread hop)."""

    async def check(request: Request) -> TokenRecord:
        return granted(request, scope)

    return check


def granted(request: Request, scope: str) -> TokenRecord:
    """The request's token if its scope allows ``scope`` (for routes that check inline
    instead of through a dependency); else ApiError 401/403 as :func:`require`."""
    record: TokenRecord | None = request.scope.get(TOKEN_KEY)
    if record is None:  # only a route outside the guard's paths would get here
        raise ApiError(401, "missing token: send 'Authorization: Bearer TOKEN'",
                       {"WWW-Authenticate": "Bearer"})
    if not scope_allows(record.scope, scope):
        raise ApiError(403, f"token {record.name!r} has scope {record.scope}; "
                            f"this needs {scope}")
    return record


READ = Depends(require("read"))
WRITE = Depends(require("write"))
ADMIN = Depends(require("admin"))
