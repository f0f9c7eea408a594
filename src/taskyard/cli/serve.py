"""``taskyard serve``: the HTTP API, the event stream, ``/metrics`` and the dashboard."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import click

from taskyard.api.http import MAX_BODY as MAX_BODY_DEFAULT
from taskyard.cli.main import POSITIVE_DURATION, State

if TYPE_CHECKING:
    from taskyard.api.http.connection import ConnectionLimits
    from taskyard.api.http.context import Settings
    from taskyard.api.http.server import HttpServer

log = logging.getLogger("taskyard.http")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WORKERS_MAX = 4
"""The default number of server processes is one per two cores (the scheduler, the
workers, the database and the clients want the others), at most this many."""

HOST = click.option("--host", default="127.0.0.1", show_default=True, envvar="TASKYARD_HTTP_HOST",
                    help="Address to bind (another than loopback exposes the API; '' every "
                         "IPv4 address).")
MAX_BODY = click.option("--max-body", type=click.IntRange(min=1024), default=MAX_BODY_DEFAULT,
                        show_default=True, envvar="TASKYARD_HTTP_MAX_BODY",
                        help="Largest graph document in bytes (413 beyond); other routes "
                             "take less (docs/http.md, Limits).")


def make_server(state: State, host: str, port: int, max_body: int, *,
                settings: Settings | None = None,
                limits: ConnectionLimits | None = None) -> HttpServer:
    """The HTTP server for ``state``'s database (not started; :meth:`HttpServer.bind`
    binds it). Imported late: the web framework loads only for the commands that serve."""
    from taskyard.api.http.app import create_app  # noqa: PLC0415
    from taskyard.api.http.context import Settings  # noqa: PLC0415
    from taskyard.api.http.server import HttpServer  # noqa: PLC0415

    if host not in LOOPBACK:
        log.warning("event=http-exposed host=%s: the API answers on every network this "
                    "address reaches (tokens still required)", host)
    app = create_app(state.yard, settings=settings or Settings(max_body=max_body))
    return HttpServer(app, host, port, limits=limits)


def default_workers() -> int:
    """One server process per two cores, at most :data:`WORKERS_MAX`: on 2 cores one
    process serves more than two (bench.http: the groups of submits, the database's
    share and the client's take the other core)."""
    return max(1, min((os.cpu_count() or 1) // 2, WORKERS_MAX))


def dashboard_url(host: str, port: int) -> str:
    """The dashboard's URL for an address as given (a wildcard one shown as loopback)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"


@click.command("serve")
@HOST
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              envvar="TASKYARD_HTTP_PORT", help="TCP port (0: a free one, said at start).")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              envvar="TASKYARD_HTTP_WORKERS",
              help=f"Server processes [default: one per two cores, at most {WORKERS_MAX}].")
@MAX_BODY
@click.option("--max-header-size", type=click.IntRange(1024, 16 * 1024 * 1024),
              default=64 * 1024, show_default=True, envvar="TASKYARD_HTTP_MAX_HEADER_SIZE",
              help="Largest request line and headers in bytes (431 beyond).")
@click.option("--idle-timeout", type=POSITIVE_DURATION, default="15s", show_default=True,
              envvar="TASKYARD_HTTP_IDLE_TIMEOUT",
              help="Close a connection that sends nothing for this long.")
@click.option("--request-timeout", type=POSITIVE_DURATION, default="60s", show_default=True,
              envvar="TASKYARD_HTTP_REQUEST_TIMEOUT",
              help="Drop a request not received whole (headers and body) this long after "
                   "its first byte (408).")
@click.option("--max-connections", type=click.IntRange(1, 1_000_000), default=1000,
              show_default=True, envvar="TASKYARD_HTTP_MAX_CONNECTIONS",
              help="Open connections per server process (503 beyond).")
@click.option("--trusted-host", "trusted_hosts", multiple=True,
              envvar="TASKYARD_HTTP_TRUSTED_HOSTS",
              help="Answer only requests whose Host is this name (repeatable; *.example.com "
                   "for subdomains) [default: any].")
@click.option("--auth-failures", type=click.IntRange(1, 1_000_000), default=60,
              show_default=True, envvar="TASKYARD_HTTP_AUTH_FAILURES",
              help="Failed authentications a client address may make per minute (429 "
                   "beyond).")
@click.option("--forwarded-allow-ips", envvar="TASKYARD_HTTP_FORWARDED_ALLOW_IPS",
              help="Proxies whose X-Forwarded-For/-Proto are believed (comma-separated, * "
                   "for any) [default: 127.0.0.1].")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, workers: int | None, max_body: int,
          max_header_size: int, idle_timeout: float, request_timeout: float,
          max_connections: int, trusted_hosts: tuple[str, ...], auth_failures: int,
          forwarded_allow_ips: str | None) -> None:
    """Serve the HTTP API and the dashboard until SIGTERM/SIGINT."""
    from taskyard.api.http.connection import ConnectionLimits  # noqa: PLC0415
    from taskyard.api.http.context import Settings  # noqa: PLC0415
    from taskyard.api.http.server import address_url, bind  # noqa: PLC0415

    if ctx.find_root().params.get("verbose", 0) == 0:
        logging.getLogger("taskyard").setLevel(logging.INFO)
    state: State = ctx.obj
    state.yard.store.workers.list()  # fail now, in one line, if the database is unusable
    count = workers or default_workers()
    settings = Settings(max_body=max_body, trusted_hosts=trusted_hosts,
                        auth_failures=auth_failures)
    limits = ConnectionLimits(max_header_size, idle_timeout, request_timeout, max_connections)
    try:
        sock = bind(host, port)
    except OSError as exc:  # before any line says the server started
        raise click.ClickException(f"cannot listen on {host or '*'}:{port}: "
                                   f"{exc.strerror or exc}") from None
    if host not in LOOPBACK:
        log.warning("event=http-exposed host=%s: the API answers on every network this "
                    "address reaches (tokens still required)", host)
    bound_host, bound_port = sock.getsockname()[:2]
    log.info("event=http-started url=%s address=%s port=%d workers=%d (sign in with a "
             "token: taskyard token create)", address_url(sock), bound_host, bound_port,
             count)
    if count == 1:
        from taskyard.api.http.app import create_app  # noqa: PLC0415
        from taskyard.api.http.server import HttpServer  # noqa: PLC0415

        HttpServer(create_app(state.yard, settings=settings), limits=limits, sock=sock,
                   forwarded_allow_ips=forwarded_allow_ips).run()
        return
    from taskyard.api.http.workers import ServeSpec, Workers  # noqa: PLC0415

    spec = ServeSpec(state.url, settings, limits, forwarded_allow_ips,
                     logging.getLogger("taskyard").getEffectiveLevel())
    state.close()  # the parent serves nothing: its processes open their own
    ctx.exit(Workers(spec, sock, count).run())


def register(group: click.Group) -> None:
    group.add_command(serve)
