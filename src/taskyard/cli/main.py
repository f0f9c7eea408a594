"""Entry point: ``taskyard [--db URL] COMMAND``. Errors are one line on stderr;
exit 0 on success, 1 for a failed operation, 2 for bad usage."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

import click

from taskyard.api.yard import Yard, default_url
from taskyard.core.durations import DurationError
from taskyard.store.errors import StoreError


class State:
    """What every command shares: the database URL and a lazily opened Yard."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._yard: Yard | None = None

    @property
    def yard(self) -> Yard:
        if self._yard is None:
            self._yard = Yard(self.url)
        return self._yard

    def close(self) -> None:
        if self._yard is not None:
            self._yard.close()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", envvar="TASKYARD_DB", default=None, metavar="URL",
              help="Database: sqlite:///file.db or postgresql://user@host/db "
                   "[env TASKYARD_DB; default sqlite:///taskyard.db].")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.version_option(package_name="taskyard")
@click.pass_context
def cli(ctx: click.Context, db: str | None, verbose: int) -> None:
    """taskyard: a task scheduler and task-graph engine."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    state = State(db or default_url())
    ctx.obj = state
    ctx.call_on_close(state.close)


def parse_json_option(text: str | None, option: str) -> Any:
    """JSON from an option, or a usage error naming the option."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint=option) from None


def _register() -> None:
    # Imported here so each module can import `cli` and `State` from this one.
    from taskyard.cli import daemons, graphs, jobs, retention, task_types  # noqa: PLC0415
    from taskyard.cli.schedules import schedule_group  # noqa: PLC0415

    for module in (daemons, jobs, task_types, graphs, retention):
        module.register(cli)
    cli.add_command(schedule_group)


_register()


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI and exit with 0, 1 (operation failed) or 2 (bad usage)."""
    try:
        # Without standalone mode click returns a command's `ctx.exit(code)` instead of
        # exiting, so the code is taken from the return value.
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="taskyard",
                        standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        _fail(exc.format_message(), 2)
    except click.Abort:
        _fail("aborted", 1)
    except (StoreError, TimeoutError, DurationError, FileNotFoundError) as exc:
        _fail(str(exc), 1)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    click.echo(f"taskyard: error: {' '.join(message.split())}", err=True)
    sys.exit(code)
