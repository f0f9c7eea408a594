"""Bearer tokens: minted here (the secret is shown once), stored hashed by the store,
checked on every request from a short-lived cache.

A token is ``ty_`` and 43 URL-safe characters (256 random bits). Its SHA-256 is what
``api_tokens`` keeps: tokens are random, so a fast hash is as safe as a slow one.

A request's check reads the cache, not the database: a token's row is looked up at most
once per :data:`TOKEN_TTL` seconds per server process, so a revocation or an expiry
made anywhere (another server, the CLI) takes effect within that time, and at once for
one made through this server (its cache is cleared). Failed checks are counted per
client (:class:`AuthThrottle`): past a budget a client gets 429 without a lookup.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from taskyard.core.durations import DurationError, parse_duration
from taskyard.model.errors import InvalidInput
from taskyard.model.records import SCOPES
from taskyard.store import Store
from taskyard.store.transitions.tokens import (
    TokenRecord,
    check_token_fields,
    create_token,
    lookup_token,
    touch_token,
)

PREFIX = "ty_"
TOKEN_TTL = 1.0
"""Seconds a looked-up token (live, revoked, expired or unknown) is believed."""
TOUCH_EVERY = 60.0
"""Seconds between two writes of one token's ``last_used_at``: a write per request
would serialise readers behind SQLite's single writer."""
CACHED_MAX = 10_000
"""Tokens remembered at most (unknown ones included: a client sending random tokens
cannot grow the cache without bound)."""


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def mint_token(store: Store, name: str, scope: str,
               expires: str | float | None = None) -> tuple[str, TokenRecord]:
    """Create a token valid for the duration ``expires`` (``30d``, seconds; None: until
    revoked); returns its secret (to show once) and its stored record."""
    check_token_fields(name, scope)
    lifetime = None
    if expires is not None:
        try:
            lifetime = parse_duration(expires, field="expires")
        except DurationError as exc:
            raise InvalidInput(str(exc)) from None
        if lifetime <= 0:
            raise InvalidInput(f"expires: {expires!r} must be more than 0 seconds")
    secret = PREFIX + secrets.token_urlsafe(32)
    return secret, create_token(store, name, scope, token_hash(secret), expires_in=lifetime)


def scope_allows(granted: str, needed: str) -> bool:
    """``admin`` ⊃ ``write`` ⊃ ``read``."""
    return SCOPES.index(granted) >= SCOPES.index(needed)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a presented token is: ``live`` (with its record), ``unknown``, ``revoked``
    or ``expired``. Only a live verdict carries the record: a refusal names no token."""

    status: str
    record: TokenRecord | None = None

    @property
    def live(self) -> bool:
        return self.status == "live"


@dataclass(frozen=True, slots=True)
class _Entry:
    record: TokenRecord | None
    until: float
    """Monotonic time after which the entry is looked up again."""
    expires: float | None
    """Monotonic time at which the token expires (from the database clock's distance)."""


UNKNOWN = Verdict("unknown")


class TokenChecker:
    """Checks presented tokens against a cache of their rows (see the module docstring);
    records their use at most every :data:`TOUCH_EVERY` seconds per token."""

    def __init__(self, store: Store, *, ttl: float = TOKEN_TTL) -> None:
        self.store = store
        self.ttl = ttl
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._touched: dict[int, float] = {}
        self._lock = threading.Lock()

    def cached(self, secret: str) -> Verdict | None:
        """The verdict from the cache, without I/O; None when it must be looked up."""
        if not _well_formed(secret):
            return UNKNOWN
        now = time.monotonic()
        entry = self._cache.get(token_hash(secret))
        if entry is None or entry.until <= now:
            return None
        return _verdict(entry, now)

    def lookup(self, secret: str) -> Verdict:
        """The verdict from the database (blocks: call it from a thread), cached."""
        if not _well_formed(secret):
            return UNKNOWN
        key = token_hash(secret)
        found = lookup_token(self.store, key)
        now = time.monotonic()
        if found is None:
            entry = _Entry(None, now + self.ttl, None)
        else:
            record, db_now = found
            expires = None if record.expires_at is None else now + record.expires_at - db_now
            entry = _Entry(record, now + self.ttl, expires)
        with self._lock:
            self._cache[key] = entry
            self._cache.move_to_end(key)
            while len(self._cache) > CACHED_MAX:
                self._cache.popitem(last=False)
        verdict = _verdict(entry, now)
        if verdict.record is not None:
            self._touch(verdict.record.id)
        return verdict

    def check(self, secret: str) -> Verdict:
        """:meth:`cached`, else :meth:`lookup` (blocking)."""
        return self.cached(secret) or self.lookup(secret)

    def forget(self) -> None:
        """Drop every cached verdict: a token was created or revoked through this
        server, which then holds it at once."""
        with self._lock:
            self._cache.clear()

    def _touch(self, token_id: int) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(token_id, -TOUCH_EVERY) < TOUCH_EVERY:
                return
            self._touched[token_id] = now
        touch_token(self.store, token_id)


def _well_formed(secret: str) -> bool:
    return secret.startswith(PREFIX) and len(secret) <= 100


def _verdict(entry: _Entry, now: float) -> Verdict:
    record = entry.record
    if record is None:
        return UNKNOWN
    if record.revoked:
        return Verdict("revoked")
    if entry.expires is not None and entry.expires <= now:
        return Verdict("expired")
    return Verdict("live", record)


class AuthThrottle:
    """Failed authentications per client address: past ``limit`` failures within
    ``window`` seconds, the client is refused (429) until the window ends — without a
    token lookup. Remembers at most ``clients`` addresses (the oldest are forgotten)."""

    def __init__(self, limit: int = 60, window: float = 60.0, clients: int = 10_000) -> None:
        self.limit = limit
        self.window = window
        self._clients = clients
        self._failures: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def wait(self, client: str) -> float:
        """Seconds ``client`` must wait before its next try counts (0: go ahead)."""
        found = self._failures.get(client)
        if found is None:
            return 0.0
        start, count = found
        left = start + self.window - time.monotonic()
        if left <= 0:
            del self._failures[client]
            return 0.0
        return left if count >= self.limit else 0.0

    def failed(self, client: str) -> None:
        now = time.monotonic()
        start, count = self._failures.get(client, (now, 0))
        if start + self.window <= now:
            start, count = now, 0
        self._failures[client] = (start, count + 1)
        self._failures.move_to_end(client)
        while len(self._failures) > self._clients:
            self._failures.popitem(last=False)
