"""The Leaderboard tab's other views, computed from the whole log on request.

The style-controlled board and the judges' report are fits over every vote, not
per-vote updates like the live boards, so they are computed when a visitor asks,
from the vote files (never under the vote lock), and kept for ``ttl`` seconds: a
busy page refits at most once a minute per view and arena.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from arena_core.analysis.boards import ANALYSIS_COLUMNS, StyleBoard, judges_report, style_board
from arena_core.analysis.complementarity import ComplementarityParams
from arena_core.analysis.insights import ComplementarityReport, complementarity_report
from arena_core.analysis.model_report import MODEL_COLUMNS, ModelReport, model_report
from arena_core.judges.bias import BiasReport
from arena_core.votes.read import read_votes

#: Seconds an analysis is served before it is computed again.
DEFAULT_TTL = 60.0
#: Null rounds of the page's complementarity test: 200 resolve p-values of 0.005, enough
#: for its 5% flag, in a fifth of the CLI's time (2.4 s for 20 models and 100,000 votes).
COMPLEMENTARITY_ROUNDS = 200


class Analyses:
    """Style-controlled boards and judges' reports of a registry's arenas, cached.

    ``folders`` returns the vote folders to read (the log's, the Hub download's); one
    that does not exist yet is skipped.
    """

    def __init__(self, registry, folders: Callable[[], list], *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.monotonic):  # fmt: skip
        self.registry, self._folders, self.ttl, self._clock = registry, folders, ttl, clock
        self._cache: dict[tuple, tuple[float, object]] = {}
        self._lock = threading.Lock()  # one computation at a time: they share the CPU anyway

    def style(self, arena_id: str, category: str | None = None) -> StyleBoard:
        arena = self.registry.arena(arena_id)
        return self._cached(("style", arena_id, category),
                            lambda votes: style_board(votes, arena, category=category))  # fmt: skip

    def judges(self, arena_id: str) -> BiasReport:
        arena = self.registry.arena(arena_id)
        return self._cached(("judges", arena_id),
                            lambda votes: judges_report(votes, arena, self.registry))  # fmt: skip

    def complementarity(self, arena_id: str) -> ComplementarityReport:
        """Per-prompt complementarity of the arena's models (seeded: the same votes give the
        same table; fewer null rounds than the CLI's default, for the page's latency)."""
        self.registry.arena(arena_id)
        params = ComplementarityParams(rounds=COMPLEMENTARITY_ROUNDS)
        return self._cached(("complementarity", arena_id),
                            lambda votes: complementarity_report(
                                votes, arena_id, params, rng=np.random.default_rng(0)))  # fmt: skip

    def model(self, arena_id: str, model_id: str) -> ModelReport:
        """One model's report (``arena_core.analysis.model_report``), from the log."""
        arena = self.registry.arena(arena_id)
        return self._cached(("model", arena_id, model_id),
                            lambda votes: model_report(votes, arena_id, model_id, arena=arena),
                            columns=MODEL_COLUMNS)  # fmt: skip

    def _cached(self, key: tuple, compute: Callable, columns=ANALYSIS_COLUMNS):
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and self._clock() - hit[0] < self.ttl:
                return hit[1]
            folders = [f for f in self._folders() if Path(f).exists()]
            value = compute(read_votes(folders, columns=columns))
            self._cache[key] = (self._clock(), value)
            return value
