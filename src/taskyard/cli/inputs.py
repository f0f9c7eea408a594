"""What the CLI reads from users beyond plain options: job args (JSON text, ``@FILE`` or
``-`` for stdin), files of jobs (``submit --from-file``) and whole numbers, each
bounded as the stores bound them (:mod:`taskyard.core.limits`), so that a number too
large is one usage line, never a database error."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from taskyard.core.limits import COUNT_MAX, ID_MAX, INT_MAX, PRIORITY_MAX, too_deep
from taskyard.model.errors import InvalidInput

if TYPE_CHECKING:
    from taskyard.cli.main import State

ID = click.IntRange(1, ID_MAX)
PRIORITY = click.IntRange(-PRIORITY_MAX, PRIORITY_MAX)
COUNT = click.IntRange(0, COUNT_MAX)
POSITIVE_COUNT = click.IntRange(1, COUNT_MAX)
LIMIT = click.IntRange(1, COUNT_MAX)
QUEUE_LENGTH = click.IntRange(1, INT_MAX)

args_option = click.option(
    "--args", "args_text", metavar="JSON|@FILE|-",
    help="Job args: a JSON object, @FILE to read it from a file, - from stdin.")


def read_args(text: str | None, option: str = "--args") -> dict[str, Any] | None:
    """The JSON object ``text`` gives (itself, ``@FILE`` or ``-``); None without it.
    Unreadable or malformed input is bad usage (exit 2), naming ``option``."""
    if text is None:
        return None
    source = text
    if text == "-":
        source = sys.stdin.read()
    elif text.startswith("@"):
        try:
            source = Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(f"cannot read {text[1:]!r} ({exc})",
                                     param_hint=option) from None
    try:
        args = json.loads(source)
    except RecursionError:  # nested far beyond the limit: the limit's own message
        raise InvalidInput(str(too_deep(option))) from None
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint=option) from None
    if not isinstance(args, dict):
        raise click.BadParameter("must be a JSON object", param_hint=option)
    return args


def read_jobs(source: str) -> list[tuple[int, Any]]:
    """The jobs of a JSON Lines file (``-``: stdin), each with its line number; blank
    lines skipped. A line that is not a JSON object is bad usage, naming the line."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {source!r} ({exc})",
                                 param_hint="--from-file") from None
    jobs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            job = json.loads(line)
        except RecursionError:
            raise InvalidInput(f"{source} line {number}: nested too deep") from None
        except ValueError as exc:
            raise click.BadParameter(f"line {number}: not valid JSON ({exc})",
                                     param_hint="--from-file") from None
        if not isinstance(job, dict):
            raise click.BadParameter(f"line {number}: a job must be a JSON object with a "
                                     "'type'", param_hint="--from-file")
        jobs.append((number, job))
    return jobs


def submit_file(state: State, source: str) -> None:
    """``submit --from-file``: the file's jobs by :meth:`Yard.submit_many`, 1,000 at a
    time (each batch all or none); prints each id as its batch is in. An error names
    the line of the first bad job of its batch (the batches before it are in)."""
    from rich.progress import Progress  # noqa: PLC0415 - rich is slow to import

    from taskyard.api.submissions import BATCH_MAX  # noqa: PLC0415 - start-up time

    jobs = read_jobs(source)
    if not jobs:
        raise click.BadParameter("no job in the file", param_hint="--from-file")
    # Progress on a terminal, for a file of several batches (stdout stays the ids).
    shown = sys.stderr.isatty() and len(jobs) > BATCH_MAX
    with Progress(transient=True, disable=not shown) as progress:
        task = progress.add_task("submitting", total=len(jobs))
        for start in range(0, len(jobs), BATCH_MAX):
            batch = jobs[start:start + BATCH_MAX]
            try:
                ids = state.yard.submit_many([job for _, job in batch])
            except InvalidInput as exc:
                raise InvalidInput(_with_line(str(exc), source, batch)) from None
            click.echo("\n".join(map(str, ids)))
            sys.stdout.flush()
            progress.advance(task, len(batch))


def _with_line(message: str, source: str, batch: list[tuple[int, Any]]) -> str:
    """``job N: …`` (N: the job's index in its batch) as ``FILE line L: …``."""
    found = re.match(r"job (\d+): ", message)
    if found is None or int(found.group(1)) >= len(batch):
        return f"{source}: {message}"
    return f"{source} line {batch[int(found.group(1))][0]}: {message[found.end():]}"
