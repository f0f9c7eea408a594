"""Bearer tokens of the HTTP API: rows of ``api_tokens`` (migration 0006).

Functions over a :class:`~taskyard.store.Store`, not methods of it, so that they can
move onto the storage seam as they are. The store keeps a token's SHA-256 only; minting
and hashing the secret is the API's business (``taskyard.api.http.tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from taskyard.core.durations import iso
from taskyard.core.limits import NAME_MAX, LimitError, check_name
from taskyard.model.errors import Conflict, InvalidInput, NotFound
from taskyard.model.records import JSON, SCOPES
from taskyard.store import schema as t

if TYPE_CHECKING:
    from taskyard.store import Store

_T = t.api_tokens


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A token as stored (never its secret)."""

    id: int
    name: str
    scope: str
    created_at: float
    revoked_at: float | None
    last_used_at: float | None
    expires_at: float | None = None
    """When it stops being accepted (database clock); None: never."""

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def to_json(self) -> dict[str, JSON]:
        return {"name": self.name, "scope": self.scope, "created_at": iso(self.created_at),
                "revoked": self.revoked, "revoked_at": iso(self.revoked_at),
                "last_used_at": iso(self.last_used_at), "expires_at": iso(self.expires_at)}


def _record(row: Any) -> TokenRecord:
    return TokenRecord(row.id, row.name, row.scope, row.created_at, row.revoked_at,
                       row.last_used_at, row.expires_at)


def check_token_fields(name: object, scope: object) -> None:
    """InvalidInput naming the field unless ``name`` and ``scope`` can be stored: a name
    follows the rule of every name (1 to 200 characters, no control characters) and
    has no leading or trailing spaces."""
    try:
        check_name(name, "token name")
    except LimitError as exc:
        raise InvalidInput(str(exc)) from None
    assert isinstance(name, str)
    if not name.strip() or name != name.strip():
        raise InvalidInput(f"token name {name!r}: 1 to {NAME_MAX} characters, "
                           "no leading or trailing spaces")
    if scope not in SCOPES:
        raise InvalidInput(f"token scope {scope!r}: one of {', '.join(SCOPES)}")


def create_token(store: Store, name: str, scope: str, token_hash: str, *,
                 expires_in: float | None = None) -> TokenRecord:
    """Store a new token, valid for ``expires_in`` seconds from now (database clock;
    None: until revoked); Conflict when a live token already has ``name``."""
    check_token_fields(name, scope)
    expires = None if expires_in is None else store.now_expr + expires_in
    try:
        with store.write() as tx:
            conn = tx.conn
            row = conn.execute(
                insert(_T).values(name=name, hash=token_hash, scope=scope,
                                  created_at=store.now_expr, expires_at=expires)
                .returning(*_T.c)).one()
    except IntegrityError:
        raise Conflict(f"token {name!r} exists already (revoke it first)") from None
    return _record(row)


def list_tokens(store: Store, *, include_revoked: bool = True) -> list[TokenRecord]:
    """Tokens in creation order, revoked ones included unless asked otherwise."""
    query = select(_T).order_by(_T.c.id)
    if not include_revoked:
        query = query.where(_T.c.revoked_at.is_(None))
    with store.read() as tx:
        conn = tx.conn
        return [_record(r) for r in conn.execute(query)]


def revoke_token(store: Store, name: str) -> TokenRecord:
    """Revoke the live token called ``name``; NotFound when there is none."""
    with store.write() as tx:
        conn = tx.conn
        row = conn.execute(
            update(_T).where(_T.c.name == name, _T.c.revoked_at.is_(None))
            .values(revoked_at=store.now_expr).returning(*_T.c)).first()
    if row is None:
        raise NotFound(f"no live token {name!r}")
    return _record(row)


def find_token(store: Store, token_hash: str) -> TokenRecord | None:
    """The token with this hash, revoked or not (the caller tells them apart)."""
    found = lookup_token(store, token_hash)
    return None if found is None else found[0]


def lookup_token(store: Store, token_hash: str) -> tuple[TokenRecord, float] | None:
    """The token with this hash (revoked, expired or not) and the database clock's time
    of the lookup, read in one statement (whether it has expired is the clock's call);
    None when there is no such token."""
    with store.read() as tx:
        row = tx.conn.execute(select(*_T.c, store.now_expr.label("now_"))
                              .where(_T.c.hash == token_hash)).first()
    return None if row is None else (_record(row), float(row.now_))


def touch_token(store: Store, token_id: int) -> None:
    """Record that the token was just used (``last_used_at``, database clock)."""
    with store.write() as tx:
        conn = tx.conn
        conn.execute(update(_T).where(_T.c.id == token_id).values(last_used_at=store.now_expr))
