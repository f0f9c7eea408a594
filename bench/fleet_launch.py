"""Many ``taskyard worker`` daemons from one process: ``bench.fleet``'s worker fleet.

The launcher imports the worker's stack once (the CLI, SQLAlchemy, psycopg, the store
and the cycle), freezes what it made out of the garbage collector's reach, then forks
one child per worker; each child runs ``taskyard --db URL worker ...`` through the CLI's
own entry point, as the command would. The children share the launcher's pages until
they write them (copy on write): 200 workers fit in a few GiB instead of ~11 GiB of
separate interpreters. Nothing is connected before the fork: each worker opens its own
connections, and ``PGAPPNAME`` names them ``worker-I`` in ``pg_stat_activity``.

SIGTERM (or SIGINT) is passed on to every worker; the launcher exits once they all
have, with the number of workers that exited with an error.

Usage: python -m bench.fleet_launch URL COUNT [--first I] [--stagger S] [--listen-db URL]
       [--shared-listener] [-- WORKER ARGS]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import sys
import time


def _preload() -> None:
    import psycopg  # noqa: F401, PLC0415
    import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401, PLC0415

    import taskyard.cli.daemons  # noqa: PLC0415
    import taskyard.scheduler.cycle  # noqa: PLC0415
    import taskyard.store.postgresql.driver  # noqa: PLC0415
    import taskyard.worker.run  # noqa: F401, PLC0415
    from taskyard.cli.main import cli  # noqa: PLC0415

    # The commands' modules load when they are looked up: look `worker` up now.
    cli.get_command(None, "worker")  # type: ignore[arg-type]


def _child(url: str, index: int, root_args: list[str], worker_args: list[str]) -> None:
    from taskyard.cli.main import main  # noqa: PLC0415

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.environ["PGAPPNAME"] = f"worker-{index}"
    code = 0
    try:
        main(["--db", url, *root_args, "worker", "--name", f"fleet-{index}", *worker_args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback  # noqa: PLC0415

        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    worker_args: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, worker_args = args[:cut], args[cut + 1:]
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("count", type=int)
    parser.add_argument("--first", type=int, default=0, help="index of the first worker")
    parser.add_argument("--stagger", type=float, default=0.02,
                        help="seconds between two forks (spreads the registrations)")
    parser.add_argument("--listen-db")
    parser.add_argument("--shared-listener", action="store_true")
    parser.add_argument("--narrow", metavar="N:W", help=(
        "the first N workers with --prefetch W (windows that differ, as paces measured "
        "on a loaded machine make them)"))
    opts = parser.parse_args(args)
    narrow, window = (int(x) for x in opts.narrow.split(":")) if opts.narrow else (0, 0)
    root_args = (["--listen-db", opts.listen_db] if opts.listen_db else []) + \
        (["--shared-listener"] if opts.shared_listener else [])

    _preload()
    gc.collect()
    gc.freeze()  # the shared objects stay out of the children's collections (fewer copies)
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    children: list[int] = []
    for i in range(opts.first, opts.first + opts.count):
        if stopping:
            break
        pid = os.fork()
        if pid == 0:
            _child(opts.url, i, root_args, worker_args + (
                ["--prefetch", str(window)] if i - opts.first < narrow else []))
        children.append(pid)
        time.sleep(opts.stagger)
    failed = 0
    alive = set(children)
    sent = False
    while alive:
        if stopping and not sent:
            for pid in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            sent = True
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.1)
            continue
        if pid in alive:
            alive.discard(pid)
            if os.waitstatus_to_exitcode(status) != 0:
                failed += 1
    return min(failed, 100)


if __name__ == "__main__":
    sys.exit(main())
