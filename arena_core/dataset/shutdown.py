"""Leaving a Space with its votes pushed: the SIGTERM handler and the exit after it.

Spaces restart with SIGTERM, which skips ``atexit``; the handler runs the final push
(:meth:`~arena_core.dataset.hub.HubSync.flush`) and then leaves at once. Kept apart from
the sync itself, which never decides when the process ends.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def exit_now(code: int) -> None:
    """Leave at once, the votes pushed. A normal exit (``SystemExit``) ran the interpreter's
    finalisation while a native library's worker thread was still alive, and now and then
    C++ aborted the process ("terminate called without an active exception", exit -6) after
    the push: seen once in a full test run. Tests replace it (it would end pytest)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def flush_on_sigterm(flush: Callable[[], object]) -> None:
    """On SIGTERM: ``flush()``, hand the signal to the handler installed before, then exit.

    Python runs the handler in the main thread, and a signal the kernel hands to another
    thread does not cut short a sleep of the main thread: the handler waits until it wakes.
    Gradio's ``launch()`` keeps the main thread waking every 0.1 s, so it runs at once; a
    main thread blocked for minutes would hold the flush back as long (a test caught this
    with ``time.sleep(120)``).
    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("signal handlers can only be installed from the main thread")
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):
        log.info("SIGTERM: pushing waiting votes before exiting")
        flush()
        if callable(previous) and previous not in (signal.SIG_DFL, signal.SIG_IGN):
            previous(signum, frame)
        exit_now(0)

    signal.signal(signal.SIGTERM, handler)
