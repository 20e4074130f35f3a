"""A size bound on the folder where Gradio keeps the files it serves.

Every battle's audio is written to Gradio's cache folder (``GRADIO_TEMP_DIR``)
before the browser fetches it, and Gradio never removes it on its own: 20
battles with long typed prompts added 110 MB, about 8 GB an hour from one
client. Gradio's ``delete_cache`` removes files by age only, which bounds
nothing under a flood. :class:`FolderBudget` deletes the oldest files whenever
the folder outgrows its budget, sparing files younger than ``min_age`` (the
browser fetches a battle's clips within seconds of delivery, and keeps them).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: After a sweep the folder holds at most this share of its budget, so sweeps are rare.
LOW_WATER = 0.8
#: Seconds between two sweeps (a sweep stats every file: under load, tens of thousands).
SWEEP_EVERY = 60.0
#: Files younger than this (seconds) are never deleted: their browser may still fetch them.
MIN_AGE = 60.0


class FolderBudget:
    """Keep ``folder`` under ``max_bytes``, deleting the oldest files first.

    Parameters
    ----------
    folder : path
        Searched recursively; empty sub-folders left behind are removed too.
    max_bytes : int
    min_age : float
        Seconds a file is spared after its last modification.
    clock : callable
        Wall-clock seconds (file times are wall-clock), injected by tests.

    Example::

        budget = FolderBudget(demo.GRADIO_CACHE, 512 * 2**20)
        budget.start()          # a daemon thread sweeps every SWEEP_EVERY seconds
    """

    def __init__(self, folder: str | Path, max_bytes: int, *, min_age: float = MIN_AGE,
                 clock: Callable[[], float] = time.time,
                 records: Callable[[], Iterable[set]] = tuple):  # fmt: skip
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.folder = Path(folder)
        #: Gradio's records of the files it sent (``lambda: demo.temp_file_sets``): a path is
        #: forgotten only when Gradio's own clean-up deletes its file, so each file this
        #: bound deleted stayed recorded for good (an image arena's two images a battle).
        self._records = records
        self.max_bytes = int(max_bytes)
        self.min_age = min_age
        self._clock = clock
        self._stop = threading.Event()

    def sweep(self) -> int:
        """Delete oldest files until the folder fits; returns the bytes freed.

        Links are counted and deleted as links, never followed (one may loop or point
        outside the folder); a file that cannot be looked at or deleted is skipped, so
        one odd entry never stops the bound.
        """
        files = []
        for root, _, names in os.walk(self.folder):
            for name in names:
                path = Path(root, name)
                with contextlib.suppress(OSError):
                    stat = path.lstat()
                    files.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in files)
        if total <= self.max_bytes:
            return 0
        freed, target, now, deleted = 0, self.max_bytes * LOW_WATER, self._clock(), []
        for mtime, size, path in sorted(files, key=lambda f: f[0]):
            if total - freed <= target or now - mtime < self.min_age:
                break
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("could not delete served file %s: %s", path, exc)
                continue
            freed += size
            deleted.append(os.path.abspath(path))  # as Gradio records it
            _remove_empty_parents(path.parent, self.folder)
        for record in list(self._records()):  # changed in one step: Gradio adds from other threads
            record.difference_update(deleted)
        log.info("served-file folder was %d bytes over budget; freed %d", total - self.max_bytes,
                 freed)  # fmt: skip
        return freed

    def start(self, every: float = SWEEP_EVERY) -> threading.Thread:
        """Sweep in a daemon thread now, then every ``every`` seconds until :meth:`stop`.

        The first sweep is at once: a process that lives less than ``every`` (a Space
        restarting in a loop, a benchmark) would otherwise never sweep, and the folder
        grew to 14 GB on this machine that way.
        """

        def loop() -> None:
            while True:
                try:
                    self.sweep()
                except OSError:
                    log.warning("could not sweep %s", self.folder, exc_info=True)
                if self._stop.wait(every):
                    return

        thread = threading.Thread(target=loop, name="temp-budget", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()


def _remove_empty_parents(folder: Path, root: Path) -> None:
    """Remove ``folder`` and its parents up to (not including) ``root`` while they are empty."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty, or gone
            return
        folder = folder.parent
