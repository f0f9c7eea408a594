"""``taskyard publisher``: events to RabbitMQ topic exchanges (docs/integrations/rabbitmq.md);
``up --amqp URL`` runs one in a thread (:func:`start_publisher`)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import click

from taskyard.cli.main import State
from taskyard.cli.signals import stop_on_signals
from taskyard.core.amqp import AmqpUrlError, parse_amqp_url

log = logging.getLogger("taskyard.publisher")


def _check_url(_ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        try:
            parse_amqp_url(value)
        except AmqpUrlError as exc:
            raise click.BadParameter(str(exc).removeprefix(f"--amqp {value!r}: "),
                                     param=param) from None
    return value


def _require_extra() -> None:
    # Imported here: the extra may be missing, and only these commands need it.
    from taskyard.bridges.amqp_link import MissingExtra, require_amqp  # noqa: PLC0415

    try:
        require_amqp()
    except MissingExtra as exc:
        raise click.ClickException(str(exc)) from None


AMQP = click.option("--amqp", "amqp_url", metavar="URL", envvar="TASKYARD_AMQP_URL",
                    callback=_check_url,
                    help="RabbitMQ broker: amqp://user:password@host:5672/vhost "
                         "[env TASKYARD_AMQP_URL].")
NAME = click.option("--name", default="amqp", show_default=True,
                    envvar="TASKYARD_PUBLISHER_NAME",
                    help="The publisher's name: its position in the event log is kept "
                         "under it (a second name publishes everything again).")


@click.command("publisher")
@AMQP
@NAME
@click.option("--batch", type=click.IntRange(1, 10_000), default=500, show_default=True,
              help="Most events published per wait for the broker's confirms.")
@click.pass_context
def publisher(ctx: click.Context, amqp_url: str | None, name: str, batch: int) -> None:
    """Publish every committed event to RabbitMQ topic exchanges (seed 004's layout),
    at least once, resuming after the last event the broker confirmed."""
    from taskyard.bridges.publisher import main_publisher  # noqa: PLC0415

    if amqp_url is None:
        raise click.UsageError("Missing option '--amqp' (or TASKYARD_AMQP_URL).")
    _require_extra()
    if ctx.find_root().params.get("verbose", 0) == 0:
        logging.getLogger("taskyard").setLevel(logging.INFO)
    state: State = ctx.obj
    state.yard.store.workers.list()  # fail now, in one line, if the database is unusable
    ctx.exit(main_publisher(state.url, amqp_url, stop_on_signals(), name=name, batch=batch))


def start_publisher(state: State, amqp_url: str, stop: threading.Event) -> threading.Thread:
    """``up --amqp``: a publisher in a thread of ``up``, on its store, until ``stop``."""
    from taskyard.bridges.publisher import Publisher  # noqa: PLC0415

    _require_extra()
    thread = threading.Thread(target=Publisher(state.yard.store, amqp_url).run, args=(stop,),
                              kwargs={"drain": 5.0}, name="publisher", daemon=True)
    thread.start()
    return thread


def register(group: click.Group) -> None:
    group.add_command(publisher)
