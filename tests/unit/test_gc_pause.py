"""Graph submits pause cyclic garbage collection; overlapping submits (threads of one
process) must leave it as they found it."""

from __future__ import annotations

import gc
import threading

from taskyard.store.schema.graph_rows import gc_paused


def test_collection_resumes_only_after_the_last_overlapping_pause() -> None:
    assert gc.isenabled()
    entered, release = threading.Event(), threading.Event()

    def other_submit() -> None:
        with gc_paused():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other_submit)
    with gc_paused():  # this submit began first, and ends first
        thread.start()
        assert entered.wait(10)
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other submit is still writing its graph
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_pause_leaves_collection_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
