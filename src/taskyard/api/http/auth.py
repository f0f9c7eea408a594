"""Deny by default: every route but ``/healthz`` depends on :func:`require`.

``read`` tokens may GET; ``write`` tokens may also submit, cancel and retry; ``admin``
tokens may also change task types, schedules and tokens. A missing, unknown or revoked
token is 401 (with ``WWW-Authenticate: Bearer``), a live token below the scope 403.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from taskyard.api.http.errors import ApiError
from taskyard.api.http.tokens import TokenChecker, scope_allows
from taskyard.store.transitions.tokens import TokenRecord

_bearer = HTTPBearer(auto_error=False, description="A token from `taskyard token create`.")
_CHALLENGE = {"WWW-Authenticate": "Bearer"}

Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def require(scope: str) -> Callable[..., TokenRecord]:
    """A dependency that lets a request through with a live token of at least ``scope``."""

    def check(request: Request, credentials: Credentials) -> TokenRecord:
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise ApiError(401, "missing token: send 'Authorization: Bearer TOKEN'",
                           _CHALLENGE)
        checker: TokenChecker = request.app.state.tokens
        verdict = checker.check(credentials.credentials)
        record = verdict.record
        if record is None:
            raise ApiError(401, "unknown token", _CHALLENGE)
        if record.revoked:
            raise ApiError(401, f"token {record.name!r} was revoked", _CHALLENGE)
        if not scope_allows(record.scope, scope):
            raise ApiError(403, f"token {record.name!r} has scope {record.scope}; "
                                f"this needs {scope}")
        return record

    return check


READ = Depends(require("read"))
WRITE = Depends(require("write"))
ADMIN = Depends(require("admin"))
