"""The Space's boards with where they came from: one definition for the Leaderboard tab's
line under the board and for the ``/leaderboard`` API.

Both say which votes (:class:`~arena_core.snapshots.revision.Revision`), which code and
which settings computed a board, exactly as ``leaderboard --format json`` prints them, so a
board fetched from the Space's API can be replayed from its own JSON.
"""

from __future__ import annotations

import logging
import threading
import time

from arena_core.snapshots.revision import (
    LiveRevisions,
    board_settings,
    file_sha256,
    service_revisions,
)
from arena_core.snapshots.source import board_document
from arena_core.window import Window

log = logging.getLogger(__name__)


class LiveBoards:
    """Boards of an :class:`~arena_core.space.service.ArenaService` with their revision."""

    def __init__(self, service, revisions: LiveRevisions | None = None):
        self.service = service
        self.revisions = revisions or service_revisions(service)
        self._registry_sha256 = file_sha256(service.registry.path)

    def warm(self, loading: threading.Thread) -> threading.Thread:
        """Read the vote files' revision in the background once ``loading`` (the start-up
        replay) has ended, so that the first board view after a restart does not pay for it.

        The first read names every vote id of every file (1.1 s at 200,000 Hub votes, 2.8 s
        at a million); later reads take only what changed since, so this one read is all
        the warming needs. A failure is logged and left to the next view, which reads again.
        """

        def run() -> None:
            loading.join()
            start = time.perf_counter()
            try:
                revision = self.revisions.read(self.revisions.position())
            except Exception:  # the board view reads again and shows what went wrong
                log.exception("warming the boards' revision failed")
                return
            log.info("revision of %d votes read in %.2f s", revision.votes_read,
                     time.perf_counter() - start)  # fmt: skip

        thread = threading.Thread(target=run, name="revision-warmup", daemon=True)
        thread.start()
        return thread

    def board(self, arena_id: str, category: str | None = None, window: Window | None = None):
        """The live board and the revision it was computed from (see ``LiveRevisions.around``)."""
        window = window or Window()
        return self.revisions.around(lambda: self.service.board(arena_id, category, window=window))

    def settings(self, arena_id: str, category: str | None = None,
                 window: Window | None = None) -> dict:  # fmt: skip
        """Every setting that decides the board's numbers, models that cannot run included."""
        return board_settings(self.service.params, arena=arena_id, category=category,
                              window=window, unavailable=self.service.unavailable(arena_id),
                              registry_sha256=self._registry_sha256)  # fmt: skip

    def document(self, arena_id: str, category: str | None = None) -> dict:
        """The board as ``leaderboard --format json`` prints it: its own keys, then
        ``revision``, ``code_version`` and ``settings``."""
        board, revision = self.board(arena_id, category)
        return board_document(board, revision, self.settings(arena_id, category))
