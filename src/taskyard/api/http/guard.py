"""The outermost layer of the application: what every request passes before any route
reads it (pure ASGI, no body read).

In order: the ``Host`` (when trusted hosts are configured), the token (every path
under ``/api/`` and ``/metrics``: a missing or bad token is 401 before a byte of the
body is read; a client past its failure budget 429), the body's ``Content-Type``
(JSON only: 415) and its size against the route's own limit (413: at once from
``Content-Length``, else as soon as a streamed body passes it). A refusal sent before
the body was read closes the connection, so the unread body is never taken in.

Every answer gets ``X-Content-Type-Options: nosniff``; the dashboard's pages also a
``Content-Security-Policy`` (scripts, styles and connections from this server only;
no framing), ``X-Frame-Options`` and ``Referrer-Policy``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from anyio import to_thread
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taskyard.api.http.errors import error_response
from taskyard.api.http.tokens import AuthThrottle, TokenChecker, Verdict

TOKEN_KEY = "taskyard.token"
"""Where the request's live token record is kept in the ASGI scope (for the scope
checks of :mod:`taskyard.api.http.auth`)."""
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_PAGE_HEADERS = (_NOSNIFF, (b"content-security-policy", CSP.encode()),
                 (b"x-frame-options", b"DENY"), (b"referrer-policy", b"no-referrer"))
_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_JSON_TYPE = re.compile(rb"^\s*application/(?:[\w.+-]+\+)?json\s*(?:;.*)?$", re.IGNORECASE)
REFUSALS = {"unknown": "unknown token", "revoked": "token revoked",
            "expired": "token expired"}
"""What a refused token's 401 says: never its name (F9)."""


SMALL_BODY = 16 * 1024
"""The limit of the routes that take a few small fields (a decision's note, a backfill's
range) and of every POST that takes no body."""


@dataclass(frozen=True)
class BodyLimits:
    """The largest body each kind of route takes (bytes)."""

    graph: int
    """Graph documents (``POST /api/v1/graphs``, ``/graphs/{id}/tasks``): the server's
    ``--max-body``; a 100,000-task graph is about 10 MB."""
    batch: int
    """``POST /api/v1/jobs/batch``: up to 1,000 jobs."""
    apply: int
    """``POST /api/v1/apply``: a configuration document."""
    job: int
    """One job, task type, schedule, token, prune, or a signal (whose payload is bounded
    as a job's args are): the args limit and room for the other fields."""
    small: int = SMALL_BODY
    """Approve, deny, backfill, and the routes that take no body."""

    def of(self, method: str, path: str) -> int:
        if method in ("GET", "HEAD", "DELETE", "OPTIONS"):
            return 0
        for pattern, kind in ROUTE_LIMITS:
            if pattern.fullmatch(path):
                limit: int = getattr(self, kind)
                return limit
        return self.small


ROUTE_LIMITS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind) for pattern, kind in (
        (r"/api/v1/graphs", "graph"),
        (r"/api/v1/graphs/[^/]+/tasks", "graph"),
        (r"/api/v1/jobs/batch", "batch"),
        (r"/api/v1/apply", "apply"),
        (r"/api/v1/jobs", "job"),
        (r"/api/v1/task-types", "job"),
        (r"/api/v1/schedules", "job"),
        (r"/api/v1/tokens", "job"),
        (r"/api/v1/prune", "job"),
        (r"/api/v1/signals", "job"),
        (r"/api/v1/jobs/[^/]+/(?:approve|deny)", "small"),
        (r"/api/v1/schedules/.+/backfill", "small"),
    ))
"""Each route that takes a body, and the :class:`BodyLimits` field of its limit; any
other POST takes none (``small``: room for a client that sends ``{}``)."""


class Guard:
    """ASGI middleware: host, token, content type and body size, then the app."""

    def __init__(self, app: ASGIApp, *, tokens: TokenChecker, throttle: AuthThrottle,
                 limits: BodyLimits, hosts: Callable[[bytes], bool] | None = None) -> None:
        self.app = app
        self.tokens = tokens
        self.throttle = throttle
        self.limits = limits
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        api = path.startswith("/api/") or path == "/metrics"
        extra = (_NOSNIFF,) if api else _PAGE_HEADERS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        length = chunked = None
        authorization = host = content_type = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = value
            elif name == b"content-type":
                content_type = value
            elif name == b"host":
                host = value
        has_body = chunked is not None or (length is not None and length.strip() not in
                                           (b"0", b""))
        refusal = await self._refusal(scope, api, authorization, host)
        if refusal is None and has_body:
            refusal = self._body_refusal(scope, content_type, length)
        if refusal is not None:
            status, message, headers = refusal
            if has_body:  # the body stays unread: the connection cannot carry on
                headers = {**headers, "Connection": "close"}
            await error_response(status, message, headers)(scope, receive, send_with_headers)
            return
        limit = self.limits.of(scope["method"], path)
        await self.app(scope, _limited(receive, limit) if has_body else receive,
                       send_with_headers)

    async def _refusal(self, scope: Scope, api: bool, authorization: bytes, host: bytes
                       ) -> tuple[int, str, dict[str, str]] | None:
        if self.hosts is not None and not self.hosts(host):
            return 400, "Host: not a name this server answers to", {}
        if not api:
            return None
        scheme, _, secret = authorization.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return 401, "missing token: send 'Authorization: Bearer TOKEN'", _CHALLENGE
        secret = secret.strip()
        verdict: Verdict | None = self.tokens.cached(secret)
        client = (scope.get("client") or ("?", 0))[0]
        if verdict is None or not verdict.live:
            wait = self.throttle.wait(client)
            if wait > 0:
                return 429, ("too many failed authentications from this address; try "
                             f"again in {wait:.0f} s"), {"Retry-After": f"{wait:.0f}"}
        if verdict is None:
            verdict = await to_thread.run_sync(self.tokens.lookup, secret)
        if not verdict.live:
            self.throttle.failed(client)
            return 401, REFUSALS[verdict.status], _CHALLENGE
        scope[TOKEN_KEY] = verdict.record
        return None

    def _body_refusal(self, scope: Scope, content_type: bytes, length: bytes | None
                      ) -> tuple[int, str, dict[str, str]] | None:
        if not _JSON_TYPE.match(content_type):
            shown = content_type.decode("latin-1")[:60] or "none"
            return 415, f"Content-Type: {shown!r} is not JSON (send application/json)", {}
        limit = self.limits.of(scope["method"], scope["path"])
        if length is not None and (not length.strip().isdigit() or int(length) > limit):
            return 413, _too_large(limit), {}
        return None


def _too_large(limit: int) -> str:
    return f"body: larger than this route's limit of {limit} bytes"


def _limited(receive: Receive, limit: int) -> Receive:
    seen = 0

    async def limited() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                # Raised inside the application: its error handlers answer 413.
                raise HTTPException(413, _too_large(limit), {"Connection": "close"})
        return message

    return limited


def trusted_hosts(names: list[str]) -> Callable[[bytes], bool] | None:
    """A check of the ``Host`` header against ``names`` (``*.example.com`` for any
    subdomain); None when no name is given (any host is answered)."""
    if not names:
        return None
    exact = {n.lower().encode() for n in names if not n.startswith("*.")}
    suffixes = tuple(n[1:].lower().encode() for n in names if n.startswith("*."))

    def allowed(host: bytes) -> bool:
        name = host.strip().lower()
        if name.startswith(b"["):  # [::1]:8080
            name = name[:name.find(b"]") + 1]
        elif name.count(b":") == 1:
            name = name.partition(b":")[0]
        return name in exact or (bool(suffixes) and name.endswith(suffixes))

    return allowed
