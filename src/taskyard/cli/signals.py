"""How every daemon command stops: SIGTERM or SIGINT sets an event."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

log = logging.getLogger("taskyard")


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (logged as ``event=signal``), which the command
    passes to its daemon: it stops cleanly when the event is set."""
    stop = threading.Event()

    def handler(signum: int, _frame: FrameType | None) -> None:
        log.info("event=signal signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop
