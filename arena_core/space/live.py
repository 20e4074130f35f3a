"""Live ratings of one arena: replayed once at start-up, then updated vote by vote.

Each board (the whole arena, and one per prompt category) keeps a sequential
Elo state and the pair counts. A vote costs one Elo step and a count update;
the Bradley-Terry fit and its bootstrap run when a board is next looked at,
on a snapshot taken under the lock, and are cached until the next vote. The
log is never re-read per vote.

Start-up uses :func:`arena_core.leaderboard.select_votes`, the same selection
as the researchers' CLI, and every later vote takes the same path as a replay
(flagged votes and unknown models left out), so the Space's board equals
``python -m arena_core leaderboard --registry ...`` on its published log.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from arena_core.leaderboard import (
    Board,
    BoardParams,
    Entrant,
    compute_board,
    format_us,
    select_votes,
)
from arena_core.ratings.counts import OUTCOME_NAMES, PairCounts
from arena_core.ratings.elo import EloState, EloStep
from arena_core.registry import Arena
from arena_core.votes.clean import VoteTable
from arena_core.votes.reasons import FLAGGED, UNKNOWN_MODEL
from arena_core.votes.schema import Vote, parse_ts

#: Outcome code of each vote string.
OUTCOME = {name: code for code, name in enumerate(OUTCOME_NAMES)}


@dataclass
class _Track:
    """One board's running state."""

    elo: EloState
    counts: PairCounts
    used: int = 0
    last_ts_us: int | None = None
    skipped: Counter = field(default_factory=Counter)
    version: int = 0
    cached: tuple[int, Board] | None = None


class LiveArena:
    """Running boards of one arena; thread-safe."""

    def __init__(self, arena: Arena, params: BoardParams | None = None):
        self.arena = arena
        self.params = params or BoardParams()
        self.entrants = Entrant.from_arena(arena)
        self.index = {e.id: k for k, e in enumerate(self.entrants)}
        self._lock = threading.Lock()
        self._tracks = {c: self._empty() for c in (None, *arena.categories)}

    def _empty(self) -> _Track:
        n = len(self.entrants)
        prior = [e.prior_rating for e in self.entrants]
        return _Track(EloState.start(n, prior, self.params.elo), PairCounts.zeros(n))

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(c for c in self._tracks if c is not None)

    def replay(self, votes: VoteTable) -> int:
        """Rebuild every board from a vote table; returns the arena's votes used."""
        tracks = {}
        for category in self._tracks:
            sel = select_votes(votes, self.arena.id, category=category, entrants=self.entrants,
                               params=self.params)  # fmt: skip
            elo, counts = sel.replay(self.params)
            track = _Track(elo=elo, counts=counts, used=len(sel.a), last_ts_us=sel.last_ts_us,
                           skipped=sel.skipped)  # fmt: skip
            tracks[category] = track
        with self._lock:
            self._tracks = tracks
        return tracks[None].used

    def apply(self, vote: Vote) -> EloStep | None:
        """Count one logged vote; the arena-wide Elo step, or None if it is not counted."""
        if vote.arena != self.arena.id:
            raise ValueError(f"vote for arena {vote.arena!r} applied to {self.arena.id!r}")
        kind = self.params.voter_kind
        if kind is not None and (vote.voter_kind or "human") != kind:
            return None  # another board's voters (select_votes filters them likewise)
        a, b = self.index.get(vote.model_a), self.index.get(vote.model_b)
        reason = UNKNOWN_MODEL if a is None or b is None else None
        if vote.flags and not self.params.include_flagged:
            reason = FLAGGED
        ts_us = parse_ts(vote.ts)
        with self._lock:
            tracks = [self._tracks[None]]
            if vote.category is not None and vote.category in self._tracks:
                tracks.append(self._tracks[vote.category])
            if reason:
                for track in tracks:
                    track.skipped[reason] += 1
                return None
            steps = []
            for track in tracks:
                steps.append(track.elo.step(a, b, OUTCOME[vote.vote]))
                track.counts.add(a, b, OUTCOME[vote.vote])
                track.used += 1
                track.last_ts_us = ts_us
                track.version += 1
            return steps[0]

    def battles(self) -> np.ndarray:
        """Battles so far between each pair (arena-wide), for matchmaking."""
        with self._lock:
            return self._tracks[None].counts.battles()

    def pair_counts(self, category: str | None = None) -> PairCounts:
        """A copy of a board's pair counts (for the win-rate and battle-count charts)."""
        with self._lock:
            return self._tracks[category].counts.copy()

    def board(self, category: str | None = None, skipped: Counter | None = None) -> Board:
        """The board, recomputed only if a vote arrived since it was last asked for."""
        with self._lock:
            track = self._tracks[category]
            if track.cached and track.cached[0] == track.version:
                return track.cached[1]
            version = track.version
            elo = EloState(list(track.elo.ratings), list(track.elo.battles), track.elo.params)
            counts, used, last = track.counts.copy(), track.used, track.last_ts_us
            dropped = Counter(track.skipped)
        rows = compute_board(self.entrants, elo, counts, self.params)
        board = Board(
            arena=self.arena.id, category=category, method=self.params.method, rows=tuple(rows),
            votes_used=used, skipped=dict(Counter(skipped or {}) + dropped),
            last_vote=format_us(last),
        )  # fmt: skip
        with self._lock:
            if self._tracks.get(category) is track and track.version == version:
                track.cached = (version, board)
        return board
