"""PostgreSQL URLs as users write them: several hosts (a primary and its standbys) and
``pool_mode`` (a pooler's URL), kept through taskyard's normalisation and handed to
SQLAlchemy and libpq in a spelling both accept."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url

from taskyard.model.errors import UnsupportedDatabase
from taskyard.store.diagnosis import check_url, display_url
from taskyard.store.driver import Connections, normalize_url
from taskyard.store.postgresql.engine import make_engine
from taskyard.store.postgresql.listen import PollingListener, listen_target, own_connection
from taskyard.store.postgresql.urls import pg_target

MULTI = "postgresql://app:s3cret@db-a:5432,db-b:5433/taskyard?target_session_attrs=read-write"


def _libpq(url: str) -> dict[str, str]:
    return {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(url).items()}


@pytest.mark.parametrize("url", [
    MULTI,
    "postgresql://app:s3cret@/taskyard?host=db-a:5432&host=db-b:5433"
    "&target_session_attrs=read-write",
    "postgresql://app:s3cret@/taskyard?host=db-a,db-b&port=5432,5433"
    "&target_session_attrs=read-write",
])
def test_several_hosts_reach_libpq_in_order_whatever_the_spelling(url: str) -> None:
    target = pg_target(url)
    assert _libpq(target.libpq()) == {
        "user": "app", "password": "s3cret", "dbname": "taskyard", "host": "db-a,db-b",
        "port": "5432,5433", "target_session_attrs": "read-write"}
    # SQLAlchemy's dialect reads the same URL (it refuses a comma in the host part).
    seen = _connect_arguments(normalize_url(url))
    assert {k: str(seen[k]) for k in ("host", "port", "target_session_attrs")} == {
        "host": "db-a,db-b", "port": "5432,5433", "target_session_attrs": "read-write"}


def _connect_arguments(url: str, connections: Connections | None = None) -> dict[str, Any]:
    """What taskyard's engine for ``url`` hands psycopg.connect (nothing is connected)."""
    engine = make_engine(url, connections=connections)
    seen: dict[str, Any] = {}

    def capture(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        seen.update(params)
        raise _Captured

    event.listen(engine, "do_connect", capture)
    with pytest.raises(_Captured):
        engine.connect()
    engine.dispose()
    return seen


class _Captured(Exception):
    pass


def test_a_host_without_a_port_gets_the_default_one() -> None:
    assert _libpq(pg_target("postgresql://u@a,b:6000/d").libpq())["port"] == "5432,6000"


def test_the_cli_accepts_and_shows_a_url_of_several_hosts_without_its_password() -> None:
    assert check_url(MULTI, "worker") == MULTI
    shown = display_url(MULTI)
    assert "s3cret" not in shown and "db-a%2Cdb-b" in shown


def test_pool_mode_is_taskyards_own_and_never_reaches_libpq() -> None:
    url = "postgresql://u@bouncer:6432/taskyard?pool_mode=transaction&sslmode=disable"
    target = pg_target(url)
    assert target.pooled_by_transaction
    assert "pool_mode" not in target.libpq() and "sslmode=disable" in target.libpq()
    assert make_url(normalize_url(url)).query["pool_mode"] == "transaction"
    assert not pg_target("postgresql://u@h/d?pool_mode=session").pooled_by_transaction


def test_a_statement_pooler_is_refused_with_the_reason() -> None:
    with pytest.raises(UnsupportedDatabase, match=r"pool_mode=statement.*transaction of several"):
        normalize_url("postgresql://u@bouncer/taskyard?pool_mode=statement")
    with pytest.raises(UnsupportedDatabase, match="pool_mode=sometimes"):
        normalize_url("postgresql://u@bouncer/taskyard?pool_mode=sometimes")


def test_behind_a_transaction_pooler_nothing_lives_in_the_session() -> None:
    """No prepared statement (the pooler lends the server connection to others after
    each transaction), no startup option (PgBouncer refuses ``options``)."""
    pooled = _connect_arguments("postgresql+psycopg://u@bouncer/db?pool_mode=transaction")
    assert pooled["prepare_threshold"] is None and "options" not in pooled
    assert "pool_mode" not in pooled
    direct = _connect_arguments("postgresql+psycopg://u@db/db")
    assert direct["prepare_threshold"] == 1
    assert "idle_in_transaction_session_timeout" in direct["options"]


def test_the_budget_sizes_the_pool() -> None:
    engine = make_engine("postgresql+psycopg://u@db/db", connections=Connections(keep=1, most=3))
    assert (engine.pool.size(), engine.pool._max_overflow) == (1, 2)  # type: ignore[attr-defined]
    engine.dispose()


def test_where_a_process_listens() -> None:
    pooled = "postgresql+psycopg://u@bouncer/db?pool_mode=transaction"
    direct = "postgresql://u@db:5432/db"
    assert listen_target(pooled, Connections()) is None  # it polls
    assert listen_target(pooled, Connections(listen_url=direct)) == "postgresql://u@db:5432/db"
    assert listen_target(direct, Connections()) == direct
    assert own_connection(direct, Connections())
    assert not own_connection(direct, Connections(shared_listener=True))
    assert not own_connection(pooled, Connections())


def test_a_polling_listener_wakes_its_owner_to_look() -> None:
    listener = PollingListener(every=0.2)
    started = time.monotonic()
    woken = False
    while not woken:
        woken = listener.wait(0.05)
    assert woken and listener.payloads() == [""]  # "": look for yourself
    assert time.monotonic() - started >= 0.15
    assert listener.pause() and not listener.wait(0.3)
    listener.resume()
    assert listener.wait(0.5)
