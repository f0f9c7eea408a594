"""Entry point: ``taskyard [--db URL] COMMAND``. Errors are one line on stderr;
exit 0 on success, 1 for a failed operation, 2 for bad usage."""

from __future__ import annotations

import gc
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from taskyard.api.config import default_url
from taskyard.core.durations import DurationError, parse_duration
from taskyard.core.limits import one_line
from taskyard.model.errors import DatabaseUrlError, NoDatabase, StoreError, UnsupportedDatabase

if TYPE_CHECKING:
    from taskyard.api.yard import Yard
    from taskyard.store import Connections, Store

# Start-up time: `taskyard --version` and `--help` import click and this package's light
# modules only; the database stack (SQLAlchemy, the store, the daemons) is imported by
# the commands that use it, when they run.

log = logging.getLogger("taskyard.cli")


class State:
    """What every command shares: the database URL and a lazily opened Yard.

    The URL is checked when a command first needs it, not when the group parses
    ``--db``, so that ``--help`` works whatever ``TASKYARD_DB`` holds.
    """

    def __init__(self, url: str, *, listen_url: str | None = None,
                 shared_listener: bool = False) -> None:
        self.raw_url = url
        self.listen_url = listen_url
        """``--listen-db``: where PostgreSQL wake-ups are listened for, if not on ``url``."""
        self.shared_listener = shared_listener
        self.pool: dict[str, int] = {}
        """The pool of the store this command opens (``keep``, ``most``; a daemon sets
        its own before it opens it, see cli/budget.py)."""
        self.command: str | None = None
        self._checked = False
        self._yard: Yard | None = None
        self._store: Store | None = None

    @property
    def url(self) -> str:
        """The database URL, once known usable for this command (else a specific error)."""
        if not self._checked:
            from taskyard.store.diagnosis import check_url  # noqa: PLC0415 - start-up time

            try:
                check_url(self.raw_url, self.command)
            except DatabaseUrlError as exc:
                raise click.BadParameter(str(exc), param_hint="--db") from None
            self._checked = True
        return self.raw_url

    @property
    def yard(self) -> Yard:
        if self._yard is None:
            from taskyard.api.yard import Yard  # noqa: PLC0415 - start-up time

            self._yard = Yard(self.url, connections=self.connections())
        return self._yard

    @property
    def store(self) -> Store:
        """The Yard's store, or a store alone while no Yard is open: the daemons need
        no more, and a worker or scheduler then loads none of the Python API (memory)."""
        if self._yard is not None:
            return self._yard.store
        if self._store is None:
            from taskyard.store import open_store  # noqa: PLC0415 - start-up time

            self._store = open_store(self.url, connections=self.connections())
        return self._store

    def connections(self, **budget: int) -> Connections:
        """This command's PostgreSQL connections: where it listens (``--listen-db``,
        ``--shared-listener``), and its pool (``budget``: ``keep``, ``most``; by default
        the store's)."""
        from taskyard.store import Connections  # noqa: PLC0415 - start-up time

        return Connections(**{**self.pool, **budget}, listen_url=self.listen_url,
                           shared_listener=self.shared_listener)

    def close(self) -> None:
        if self._yard is not None:
            self._yard.close()
            self._yard = None
        if self._store is not None:
            self._store.close()
            self._store = None


class DatabaseFailure(click.ClickException):
    """A database error, described in one line (exit 1)."""


_COMMANDS: dict[str, tuple[str, ...]] = {
    "init": ("daemons",), "scheduler": ("daemons",), "worker": ("daemons",),
    "up": ("daemons",), "submit": ("jobs",), "jobs": ("jobs", "operations"),
    "workers": ("jobs", "operations"),
    "job": ("jobs", "logs", "waits"), "signal": ("waits",), "events": ("events",),
    "task-type": ("task_types",), "apply": ("task_types",), "pools": ("task_types",),
    "graph": ("graphs",),
    "prune": ("retention",), "serve": ("serve",), "token": ("tokens",),
    "publisher": ("publisher",), "celery-pool": ("celery_pool",),
    "schedule": ("schedules", "backfill"), "simulate": ("simulate",),
}
"""Each command, by the modules of ``taskyard.cli`` that define it (``job logs``, ``job
approve`` and ``job deny`` hang off the ``job`` group from logs.py and waits.py). A
command's module is imported when the command is looked up: ``taskyard submit`` does not
load the HTTP API, the daemons or the simulator."""


class _TaskyardGroup(click.Group):
    """The root group: loads a command's module when it is looked up, and turns database
    errors of any command into :class:`DatabaseFailure` (described here, while the
    command's ``State``, and so the URL in use, is at hand).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        # Every module of the command, even when another one registered the command
        # already (``job`` registers ``jobs``, whose ``search`` comes from operations.py).
        registered: set[str] = self.__dict__.setdefault("_registered", set())
        for module in _COMMANDS.get(cmd_name, ()):
            if module not in registered:
                registered.add(module)
                importlib.import_module(f"taskyard.cli.{module}").register(self)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if "sqlalchemy" not in sys.modules:  # nothing touched a database
                raise
            from taskyard.store.diagnosis import (  # noqa: PLC0415 - start-up time
                describe_database_error,
                is_database_error,
            )

            if not is_database_error(exc):
                raise
            url = ctx.obj.raw_url if isinstance(ctx.obj, State) else default_url()
            log.debug("database error", exc_info=True)
            raise DatabaseFailure(describe_database_error(exc, url)) from exc


@click.group(cls=_TaskyardGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", envvar="TASKYARD_DB", default=None, metavar="URL",
              help="Database: sqlite:///file.db or postgresql://user@host/db "
                   "[env TASKYARD_DB; default sqlite:///taskyard.db].")
@click.option("--listen-db", envvar="TASKYARD_LISTEN_DB", default=None, metavar="URL",
              help="PostgreSQL: listen for wake-ups on this URL (the server itself) when "
                   "--db is a pooler in transaction mode (?pool_mode=transaction); without "
                   "it such a process polls [env TASKYARD_LISTEN_DB].")
@click.option("--shared-listener", is_flag=True, envvar="TASKYARD_SHARED_LISTENER",
              help="PostgreSQL: listen through one connection per host, shared by the "
                   "taskyard processes on it [env TASKYARD_SHARED_LISTENER=1].")
@click.option("-v", "--verbose", count=True,
              help="More log output: -v each job, -vv debug, -vvv libraries too.")
@click.version_option(package_name="taskyard")
@click.pass_context
def cli(ctx: click.Context, db: str | None, listen_db: str | None, shared_listener: bool,
        verbose: int) -> None:
    """taskyard: a task scheduler and task-graph engine."""
    # taskyard's own loggers get -v/-vv; libraries (Alembic, SQLAlchemy) only -vvv.
    logging.basicConfig(level=logging.DEBUG if verbose >= 3 else logging.WARNING,
                        stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("taskyard").setLevel(logging.WARNING - 10 * min(verbose, 2))
    state = State(db or default_url(), listen_url=listen_db or None,
                  shared_listener=shared_listener)
    state.command = ctx.invoked_subcommand
    ctx.obj = state
    ctx.call_on_close(state.close)


class DurationParam(click.ParamType[float, Any]):
    """A duration option (``90``, ``90s``, ``5m``, ``2h``, ``1d``) as seconds; a value that
    is not one is bad usage (exit 2), like malformed JSON."""

    name = "duration"

    def __init__(self, *, positive: bool = False) -> None:
        self.positive = positive

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = parse_duration(value, field="duration")
        except DurationError as exc:  # not a duration, or past 100 years: which, and why
            self.fail(str(exc).removeprefix("duration: "), param, ctx)
        if self.positive and seconds <= 0:
            self.fail(f"{value!r}: must be more than 0 seconds", param, ctx)
        return seconds


DURATION = DurationParam()
POSITIVE_DURATION = DurationParam(positive=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI and exit with 0, 1 (operation failed) or 2 (bad usage).

    Whatever goes wrong ends as one line on stderr, never a traceback (``-vv`` logs
    the traceback of an unexpected error).
    """
    try:
        _main(argv)
    finally:
        if argv is None:  # the `taskyard` command (or python -m taskyard): the process ends
            # Start-up time: the interpreter's last garbage collections at exit would walk
            # every object SQLAlchemy and taskyard made (a sixth of a submit's CPU); frozen,
            # they are left to the process's end. Everything was closed already (State).
            gc.freeze()


def _main(argv: Sequence[str] | None) -> None:
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
    except (UnsupportedDatabase, DatabaseUrlError) as exc:
        _fail(str(exc), 2)
    except (StoreError, TimeoutError, DurationError, NoDatabase) as exc:
        _fail(str(exc), 1)
    except OSError as exc:
        # A file that cannot be read or written, a process that cannot be started.
        _fail(str(exc) or type(exc).__name__, 1)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except Exception as exc:
        # A bug: still one line; -vv shows where it came from.
        log.debug("unexpected error", exc_info=True)
        _fail(f"unexpected {type(exc).__name__}: {exc} (run with -vv for the traceback)", 1)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    click.echo(f"taskyard: error: {one_line(message)}", err=True)
    sys.exit(code)
