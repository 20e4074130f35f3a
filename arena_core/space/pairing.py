"""The live state the matchmaker draws from, one per arena, kept off the vote path.

:func:`arena_core.matchmaking.draw_pair` is a pure function of a fit snapshot,
the battle counts, the exposure window and the registry's rules. This module
keeps those current for the Space:

* battle counts are read from :class:`~arena_core.space.live.LiveArena` at each
  draw, so they include the last vote;
* the fit (the board's own posterior on the same counts, with the inverse
  Fisher information for the covariance of the pairs) is refreshed in a
  background thread once ``refit_votes`` votes arrived since the last one:
  a draw never waits for a fit, and nothing here runs under the vote lock
  (reading the counts takes the live arena's lock only to copy them);
* the exposure window (battles per model over the last ``window`` votes) is
  kept per prompt category, from the counts seen at successive draws, so
  exposure is balanced within a language.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence

import numpy as np

from arena_core.matchmaking import (
    MatchParams,
    Recent,
    Rules,
    Snapshot,
    draw_pair,
    fit_snapshot,
)
from arena_core.registry import Arena
from arena_core.space.live import LiveArena

log = logging.getLogger(__name__)


def rules_for(arena: Arena, index: dict[str, int]) -> Rules:
    """The registry's matchmaking rules (weights, groups that never meet) over model indices."""
    weights = np.ones(len(index))
    for model in arena.models:
        weights[index[model.id]] = model.weight
    groups = [[index[m] for m in group] for group in arena.never_paired]
    return Rules.build(len(index), weights, groups)


class _Window:
    """Battles per model over roughly the last ``votes`` votes, from cumulative counts."""

    def __init__(self, votes: int):
        self.votes = votes
        self._marks: deque[tuple[int, np.ndarray]] = deque()

    def update(self, per_model: np.ndarray) -> Recent:
        total = int(per_model.sum()) // 2
        # The counts were rebuilt (a flagged voter's votes taken out): start over. Known by
        # any model's count falling, not only the total: as many new votes as were taken
        # out, before the next draw, left the total as it was and a model's window negative.
        if self._marks and np.any(per_model < self._marks[-1][1]):
            self._marks.clear()
        if not self._marks or self._marks[-1][0] != total:
            self._marks.append((total, per_model))
        # Keep the newest mark at or before the window's start, so the window is full.
        while len(self._marks) > 1 and self._marks[1][0] <= total - self.votes:
            self._marks.popleft()
        start, base = self._marks[0]
        return Recent(per_model - base, total - start)


class Pairing:
    """Matchmaking for one arena of the Space: draws pairs from the live state.

    Parameters
    ----------
    live : LiveArena
        The arena's running boards (battle counts, entrants, board settings).
    arena : Arena
        Its registry entry (per-model weights and groups that never meet).
    params : MatchParams, optional
    background : bool
        Refit in a background thread (the Space) or in the drawing call (tests).
    """

    def __init__(self, live: LiveArena, arena: Arena, *, params: MatchParams | None = None,
                 background: bool = True):  # fmt: skip
        self.live = live
        self.params = params or MatchParams()
        self.rules = rules_for(arena, live.index)
        self.background = background
        self._prior = np.array([e.prior_rating for e in live.entrants])
        self._lock = threading.Lock()
        self._windows: dict[str | None, _Window] = {}
        self._refitting: threading.Thread | None = None
        self._snap: Snapshot | None = None
        self._fitted_votes = -1
        self._fitted_generation = -1  # the live boards' generation the fit was made from
        self.refresh()

    @property
    def snap(self) -> Snapshot:
        """The last fit the draws use."""
        return self._snap

    def draw(self, candidates: Sequence[int], category: str | None,
             rng: np.random.Generator) -> tuple[int, int]:  # fmt: skip
        """The next pair (A, B) among ``candidates``, for a prompt of ``category``."""
        scores = None
        if self.params.track_votes:  # the outcomes since the fit too, to fold them in
            counts = self.live.pair_counts()
            battles, scores = counts.battles(), counts.wins + 0.5 * (counts.ties + counts.both_bad)
        else:
            battles = self.live.battles()
        recent = self._recent(category, battles)
        # The boards were rebuilt since the fit (without a flagged voter's votes, say): its
        # fit must not go on choosing the pairs. Told by the boards' generation, not by a
        # count falling: new votes on those pairs can hide the fall.
        if (int(battles.sum()) // 2 - self._fitted_votes >= self.params.refit_votes
                or self.live.generation != self._fitted_generation):  # fmt: skip
            self._refresh_soon()
        return draw_pair(self._snap, battles, candidates, rng, recent=recent, rules=self.rules,
                         params=self.params, scores=scores)  # fmt: skip

    def refresh(self) -> Snapshot:
        """Refit on the current counts and publish the new snapshot (runs in the caller)."""
        generation = self.live.generation  # read first: a rebuild during the fit refits again
        counts = self.live.pair_counts()
        _, snap = fit_snapshot(counts, self._prior, prior_weight=self.live.params.prior_weight,
                               params=self.params, weights=self.rules.weights)  # fmt: skip
        with self._lock:
            self._snap, self._fitted_votes = snap, counts.total()
            self._fitted_generation = generation
        return snap

    def wait(self) -> None:
        """Block until a background refit in progress has finished (for tests and shutdown)."""
        thread = self._refitting
        if thread is not None:
            thread.join()

    def _refresh_soon(self) -> None:
        if not self.background:
            self.refresh()
            return
        with self._lock:
            if self._refitting is not None and self._refitting.is_alive():
                return
            self._refitting = threading.Thread(target=self._refresh_logged, name="pairing-refit",
                                               daemon=True)  # fmt: skip
            self._refitting.start()

    def _refresh_logged(self) -> None:
        try:
            self.refresh()
        except Exception:  # keep the last snapshot; retry once refit_votes more votes arrived
            log.exception("arena %s: matchmaking refit failed", self.live.arena.id)
            with self._lock:  # not on every draw, a rebuild's included (no storm of refits)
                self._fitted_votes = int(self.live.battles().sum()) // 2
                self._fitted_generation = self.live.generation

    def _recent(self, category: str | None, battles: np.ndarray) -> Recent:
        """Battles per model over the exposure window of this prompt category."""
        if category is not None and category in self.live.categories:
            per_model = self.live.pair_counts(category).battles().sum(axis=1)
        else:
            category, per_model = None, battles.sum(axis=1)
        with self._lock:
            window = self._windows.setdefault(category, _Window(self.params.window))
            return window.update(per_model)
