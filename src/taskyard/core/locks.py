"""Lock claims: rendering templates against job args and deciding conflicts."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from taskyard.core.templates import TemplateError, fill_template, template_fields

LockTemplateError = TemplateError
"""A lock template that is malformed or names an arg the job lacks."""


@dataclass(frozen=True, slots=True, order=True)
class LockClaim:
    """A named resource a job holds while dispatched or running.

    Modes: exclusive (the default), shared, or shared within a named group
    (``group``): claims on one key are compatible only when neither is
    exclusive and both are in the same group — plain shared claims form the
    group ``""``. Groups express "jobs xor updates" (AWX: a job xor inventory
    updates of one inventory), which shared/exclusive alone cannot.
    """

    key: str
    exclusive: bool = True
    group: str = ""

    def conflicts(self, other: LockClaim) -> bool:
        """Two claims on one key conflict unless both are shared in the same group."""
        if self.key != other.key:
            return False
        return self.exclusive or other.exclusive or self.group != other.group

    def encode(self) -> str:
        """``key``, ``key:shared`` or ``key:group=NAME`` — the form stored and shown."""
        if self.exclusive:
            return self.key
        return f"{self.key}:group={self.group}" if self.group else f"{self.key}:shared"


_GROUP = re.compile(r":group=([A-Za-z0-9_.-]+)$")


def decode_claim(text: str) -> LockClaim:
    """Inverse of :meth:`LockClaim.encode`; ``:exclusive`` is also accepted."""
    group = _GROUP.search(text)
    if group:
        return LockClaim(text[: group.start()], exclusive=False, group=group.group(1))
    if text.endswith(":shared"):
        return LockClaim(text[: -len(":shared")], exclusive=False)
    if text.endswith(":exclusive"):
        return LockClaim(text[: -len(":exclusive")], exclusive=True)
    return LockClaim(text, exclusive=True)


def check_template(template: str) -> list[str]:
    """The ``{arg}`` names a lock template uses, or LockTemplateError if it cannot be
    rendered (an empty key, an unbalanced brace, a field that is not a plain name)."""
    claim = decode_claim(template)
    if not claim.key:
        raise LockTemplateError(f"lock {template!r}: the key is empty")
    return template_fields(claim.key, f"lock {template!r}")


def render_claim(template: str, args: Mapping[str, object]) -> LockClaim:
    """Fill ``{arg}`` placeholders of a lock template from the job's args."""
    claim = decode_claim(template)
    if not claim.key:
        raise LockTemplateError(f"lock {template!r}: the key is empty")
    key = fill_template(claim.key, args, f"lock {template!r}")
    return LockClaim(key, claim.exclusive, claim.group)


def simultaneous_claim(type_name: str, args: Mapping[str, object]) -> LockClaim:
    """The exclusive claim that keeps two same-args jobs of a type from overlapping."""
    digest = hashlib.sha1(
        json.dumps(args, sort_keys=True, separators=(",", ":")).encode(), usedforsecurity=False
    ).hexdigest()[:16]
    return LockClaim(f"simultaneous:{type_name}:{digest}", exclusive=True)


def render_claims(
    type_name: str,
    templates: Iterable[str],
    args: Mapping[str, object],
    *,
    simultaneous: bool = True,
    extra: Iterable[str] = (),
) -> tuple[LockClaim, ...]:
    """All claims of a job: its type's templates, its own, and the no-simultaneous lock."""
    claims = {render_claim(t, args) for t in (*templates, *extra)}
    if not simultaneous:
        claims.add(simultaneous_claim(type_name, args))
    return tuple(sorted(claims))
