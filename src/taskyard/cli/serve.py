"""``taskyard serve``: the HTTP API, the event stream, ``/metrics`` and the dashboard."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import click

from taskyard.api.http import MAX_BODY as MAX_BODY_DEFAULT
from taskyard.cli.main import State

if TYPE_CHECKING:
    from taskyard.api.http.server import HttpServer

log = logging.getLogger("taskyard.http")
LOOPBACK = ("127.0.0.1", "localhost", "::1")

HOST = click.option("--host", default="127.0.0.1", show_default=True, envvar="TASKYARD_HTTP_HOST",
                    help="Address to bind (another than loopback exposes the API).")
MAX_BODY = click.option("--max-body", type=click.IntRange(min=1024), default=MAX_BODY_DEFAULT,
                        show_default=True, envvar="TASKYARD_HTTP_MAX_BODY",
                        help="Largest request body in bytes (413 beyond).")


def make_server(state: State, host: str, port: int, max_body: int) -> HttpServer:
    """The HTTP server for ``state``'s database (not started). Imported late: the web
    framework loads only for the commands that serve."""
    from taskyard.api.http.app import create_app  # noqa: PLC0415
    from taskyard.api.http.context import Settings  # noqa: PLC0415
    from taskyard.api.http.server import HttpServer  # noqa: PLC0415

    if host not in LOOPBACK:
        log.warning("event=http-exposed host=%s: the API answers on every network this "
                    "address reaches (tokens still required)", host)
    app = create_app(state.yard, settings=Settings(max_body=max_body))
    return HttpServer(app, host, port)


def dashboard_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"


@click.command("serve")
@HOST
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              envvar="TASKYARD_HTTP_PORT", help="TCP port.")
@MAX_BODY
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, max_body: int) -> None:
    """Serve the HTTP API and the dashboard until SIGTERM/SIGINT."""
    if ctx.find_root().params.get("verbose", 0) == 0:
        logging.getLogger("taskyard").setLevel(logging.INFO)
    state: State = ctx.obj
    state.yard.store.workers.list()  # fail now, in one line, if the database is unusable
    server = make_server(state, host, port, max_body)
    log.info("event=http-started url=%s (sign in with a token: taskyard token create)",
             dashboard_url(host, port))
    server.run()


def register(group: click.Group) -> None:
    group.add_command(serve)
