"""PostgreSQL URLs as users write them: several hosts, and what taskyard reads itself.

- **Several hosts** (a primary and its standbys): libpq's form
  ``postgresql://user@h1:5432,h2:5433/db?target_session_attrs=read-write`` is kept, in
  the one spelling that both SQLAlchemy and libpq read: ``postgresql://user@/db?host=
  h1,h2&port=5432,5433&...`` (SQLAlchemy's own parser rejects a comma in the host).
  libpq tries the hosts in order and, with ``target_session_attrs=read-write``, takes
  the one that accepts writes: after a failover, the promoted standby.
- **``pool_mode``**: the URL of a connection pooler (PgBouncer…) says how it pools,
  with PgBouncer's own word. ``session`` changes nothing. ``transaction`` (a server
  connection lent per transaction) means no prepared statements (PgBouncer before 1.21
  cannot route them), no session settings at connect, and no LISTEN through it (see
  store/postgresql/listen.py). ``statement`` cannot run taskyard's transactions and is
  refused. libpq never sees the parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.engine import URL, make_url

from taskyard.model.errors import UnsupportedDatabase

POOL_MODES = ("session", "transaction")
_NETLOC = re.compile(r"^(?P<scheme>[a-z0-9+]+://)(?P<user>[^@/?#]*@)?(?P<hosts>[^/?#]*)"
                     r"(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


def spell_hosts(url: str) -> str:
    """``url`` with a comma-separated host list moved to ``host=``/``port=`` parameters
    (unchanged when it names one host, or none)."""
    found = _NETLOC.match(url)
    if found is None or "," not in found["hosts"]:
        return url
    hosts: list[str] = []
    ports: list[str] = []
    for item in found["hosts"].split(","):
        host, port = _host_port(item)
        hosts.append(host)
        ports.append(port)
    rest = found["rest"]
    path, sep, query = rest.partition("?")
    params = f"host={','.join(hosts)}&port={','.join(ports)}"
    return (f"{found['scheme']}{found['user'] or ''}{path or '/'}"
            f"?{params}{'&' + query if sep and query else ''}")


def _host_port(item: str) -> tuple[str, str]:
    if item.startswith("["):  # [IPv6]:port
        host, _, after = item[1:].partition("]")
        return host, after[1:] if after.startswith(":") else "5432"
    host, _, port = item.partition(":")
    if not host:
        raise UnsupportedDatabase(f"database URL: empty host in the host list {item!r}")
    return host, port or "5432"


@dataclass(frozen=True)
class PgTarget:
    """A PostgreSQL URL taken apart: what the driver connects to, and how it pools."""

    url: URL
    """For SQLAlchemy (``postgresql+psycopg``), without taskyard's own parameters."""
    pool_mode: str = "session"

    @property
    def pooled_by_transaction(self) -> bool:
        return self.pool_mode == "transaction"

    def libpq(self) -> str:
        """The same target as a libpq URI (for psycopg.connect)."""
        return self.url.set(drivername="postgresql").render_as_string(hide_password=False)


def pg_target(url: str) -> PgTarget:
    """``url`` (any spelling taskyard accepts) as a :class:`PgTarget`; an unknown
    ``pool_mode`` is refused (UnsupportedDatabase)."""
    parsed = make_url(spell_hosts(url)).set(drivername="postgresql+psycopg")
    hosts = parsed.query.get("host")
    if isinstance(hosts, tuple) and "port" not in parsed.query:
        # SQLAlchemy's other spelling, host=h1:p1&host=h2:p2: libpq takes one host=.
        pairs = [_host_port(item) for item in hosts]
        parsed = parsed.update_query_dict({"host": ",".join(h for h, _ in pairs),
                                           "port": ",".join(p for _, p in pairs)})
    mode = parsed.query.get("pool_mode", "session")
    if not isinstance(mode, str) or mode not in POOL_MODES:
        shown = mode if isinstance(mode, str) else ",".join(mode)
        why = (" (each statement may run on another server connection: a transaction of "
               "several statements cannot)" if shown == "statement" else "")
        raise UnsupportedDatabase(f"database URL: pool_mode={shown} is not supported{why}; "
                                  "use pool_mode=transaction or pool_mode=session")
    return PgTarget(parsed.difference_update_query(["pool_mode"]), mode)
