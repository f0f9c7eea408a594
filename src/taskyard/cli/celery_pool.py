"""``taskyard celery-pool``: jobs run by existing Celery workers (docs/integrations/celery.md)."""

from __future__ import annotations

import logging

import click

from taskyard.cli.main import State
from taskyard.cli.signals import stop_on_signals


@click.command("celery-pool")
@click.option("--broker", required=True, metavar="URL", envvar="TASKYARD_CELERY_BROKER",
              help="The Celery broker the workers consume (redis://…, amqp://…) "
                   "[env TASKYARD_CELERY_BROKER].")
@click.option("--result-backend", metavar="URL", envvar="TASKYARD_CELERY_RESULT_BACKEND",
              help="The workers' result backend, to keep each task's return value as the "
                   "job's result [env TASKYARD_CELERY_RESULT_BACKEND].")
@click.option("--pool", "pools", multiple=True,
              help="Pools served (repeatable; default: celery). Give Celery task types "
                   "pools that no `taskyard worker` serves.")
@click.option("--capacity", type=click.IntRange(min=1), default=16, show_default=True,
              help="Most capacity units of jobs in Celery at once.")
@click.option("--queue", help="Celery queue the tasks are sent to [default: Celery's routing].")
@click.option("--name", help="Worker name [default: HOST-celery-PID].")
@click.option("--lease", default=15.0, show_default=True, type=float,
              help="Lease seconds: expelled when not renewed for this long.")
@click.pass_context
def celery_pool(ctx: click.Context, broker: str, result_backend: str | None,
                pools: tuple[str, ...], capacity: int, queue: str | None, name: str | None,
                lease: float) -> None:
    """Run the jobs placed on this pool as Celery tasks (handler celery:TASK_NAME), keeping
    placement, locks, capacity, timeouts and retries taskyard's."""
    try:
        import celery  # noqa: F401, PLC0415 - only to fail early without the extra
    except ImportError:
        raise click.ClickException(
            "celery-pool needs Celery: pip install 'taskyard[celery]'") from None
    from taskyard.bridges.celery_pool import main_celery_pool  # noqa: PLC0415
    from taskyard.scheduler.cycle import run_cycle  # noqa: PLC0415 - start-up time

    if ctx.find_root().params.get("verbose", 0) == 0:
        logging.getLogger("taskyard").setLevel(logging.INFO)
    state: State = ctx.obj
    state.yard.store.workers.list()  # fail now, in one line, if the database is unusable
    state.close()
    ctx.exit(main_celery_pool(
        state.url, broker, stop_on_signals(), result_backend=result_backend, name=name,
        pools=pools or ("celery",), capacity=capacity, lease_seconds=lease, queue=queue,
        placer=lambda cycle: run_cycle(cycle, holder="celery-pool", maintenance_every=0.25,
                                       record=False)))


def register(group: click.Group) -> None:
    group.add_command(celery_pool)
