"""Bearer tokens: minted here (the secret is shown once), stored hashed by the store.

A token is ``ty_`` and 43 URL-safe characters (256 random bits). Its SHA-256 is what
``api_tokens`` keeps: tokens are random, so a fast hash is as safe as a slow one, and a
request's check costs one indexed lookup.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass

from taskyard.model.records import SCOPES
from taskyard.store import Store
from taskyard.store.transitions.tokens import (
    TokenRecord,
    check_token_fields,
    create_token,
    find_token,
    touch_token,
)

PREFIX = "ty_"
TOUCH_EVERY = 60.0
"""Seconds between two writes of one token's ``last_used_at``: a write per request
would serialise readers behind SQLite's single writer."""


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def mint_token(store: Store, name: str, scope: str) -> tuple[str, TokenRecord]:
    """Create a token; returns its secret (to show once) and its stored record."""
    check_token_fields(name, scope)
    secret = PREFIX + secrets.token_urlsafe(32)
    return secret, create_token(store, name, scope, token_hash(secret))


def scope_allows(granted: str, needed: str) -> bool:
    """``admin`` ⊃ ``write`` ⊃ ``read``."""
    return SCOPES.index(granted) >= SCOPES.index(needed)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a presented token is: unknown (None record), revoked, or live."""

    record: TokenRecord | None

    @property
    def live(self) -> bool:
        return self.record is not None and not self.record.revoked


class TokenChecker:
    """Looks presented tokens up (every request: a revocation takes effect at once) and
    records their use at most every :data:`TOUCH_EVERY` seconds per token."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._touched: dict[int, float] = {}
        self._lock = threading.Lock()

    def check(self, secret: str) -> Verdict:
        if not secret.startswith(PREFIX) or len(secret) > 100:
            return Verdict(None)
        record = find_token(self.store, token_hash(secret))
        if record is not None and not record.revoked:
            self._touch(record.id)
        return Verdict(record)

    def _touch(self, token_id: int) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(token_id, -TOUCH_EVERY) < TOUCH_EVERY:
                return
            self._touched[token_id] = now
        touch_token(self.store, token_id)
