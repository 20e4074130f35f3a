"""Live ratings of one arena: replayed once at start-up, then updated vote by vote.

Each board (the whole arena, and one per prompt category) keeps a sequential
Elo state, the pair counts, and the counted votes themselves (model indices,
outcome, time: 19 bytes a vote) for boards over a time window or with time
decay. A vote costs one Elo step, a count update and an append; the
Bradley-Terry fit and its intervals run when a board is next looked at, on a
snapshot taken under the lock, and are cached until the next vote. The log is
never re-read per vote.

Start-up uses :func:`arena_core.selection.select_votes`, the same selection as
the researchers' CLI; every later vote takes the same path as a replay (flagged
votes and unknown models left out), and windowed or decayed boards are built
by :class:`~arena_core.selection.Selection` like the CLI's, so the Space's board
equals ``python -m arena_core leaderboard --registry ...`` on its published log.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from arena_core.leaderboard import Board, BoardParams, make_board, standings
from arena_core.ratings.counts import OUTCOME_NAMES, PairCounts, count_pairs
from arena_core.ratings.elo import EloState, EloStep
from arena_core.registry import Arena
from arena_core.selection import Entrant, Selection, select_votes
from arena_core.votes.clean import VoteTable
from arena_core.votes.reasons import ANOMALOUS_VOTER, FLAGGED, UNKNOWN_MODEL
from arena_core.votes.schema import Vote, parse_ts
from arena_core.window import ALL_TIME, Window

#: Outcome code of each vote string.
OUTCOME = {name: code for code, name in enumerate(OUTCOME_NAMES)}
#: Votes of room a history starts with; it doubles when full.
_START_CAPACITY = 1024


class _History:
    """The counted votes of one board, in the order they were applied (a growable array)."""

    def __init__(self, a=(), b=(), outcome=(), ts_us=()):
        n = len(a)
        size = max(_START_CAPACITY, 2 * n)
        self.a, self.b = np.zeros(size, np.int32), np.zeros(size, np.int32)
        self.outcome, self.ts_us = np.zeros(size, np.int8), np.zeros(size, np.int64)
        self.a[:n], self.b[:n], self.outcome[:n], self.ts_us[:n] = a, b, outcome, ts_us
        self.n = n

    def append(self, a: int, b: int, outcome: int, ts_us: int) -> None:
        if self.n == len(self.a):
            for name in ("a", "b", "outcome", "ts_us"):
                old = getattr(self, name)
                grown = np.zeros(2 * len(old), old.dtype)
                grown[: self.n] = old
                setattr(self, name, grown)
        k = self.n
        self.a[k], self.b[k], self.outcome[k], self.ts_us[k] = a, b, outcome, ts_us
        self.n += 1

    def selection(self, entrants: list[Entrant], window: Window) -> Selection:
        """A copy of the votes in ``window``, as the CLI's selection of the same log holds them."""
        n = self.n
        keep = window.mask(self.ts_us[:n])
        return Selection(entrants, self.a[:n][keep], self.b[:n][keep], self.outcome[:n][keep],
                         self.ts_us[:n][keep], Counter(), window)  # fmt: skip


@dataclass
class _Track:
    """One board's running state."""

    elo: EloState
    counts: PairCounts
    history: _History
    used: int = 0
    last_ts_us: int | None = None
    skipped: Counter = field(default_factory=Counter)
    version: int = 0
    #: Boards computed at (version, (window, availability, skipped)).
    cached: dict = field(default_factory=dict)


class LiveArena:
    """Running boards of one arena; thread-safe."""

    def __init__(self, arena: Arena, params: BoardParams | None = None):
        self.arena = arena
        self.params = params or BoardParams()
        self.entrants = Entrant.from_arena(arena)
        self.index = {e.id: k for k, e in enumerate(self.entrants)}
        self._lock = threading.Lock()
        self._tracks = {c: self._empty() for c in (None, *arena.categories)}
        #: Boards adopted whole so far (a replay, a rebuild without a flagged voter's
        #: votes): whoever keeps a state derived from the counts (the matchmaking's fit)
        #: knows it must be made again, whatever the counts did meanwhile.
        self.generation = 0

    def _empty(self) -> _Track:
        n = len(self.entrants)
        prior = [e.prior_rating for e in self.entrants]
        return _Track(EloState.start(n, prior, self.params.elo), PairCounts.zeros(n), _History())

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(c for c in self._tracks if c is not None)

    def replay(self, votes: VoteTable) -> int:
        """Rebuild every board from a vote table; returns the arena's votes used."""
        tracks = self.rebuilt(votes)
        self.adopt(tracks)
        return tracks[None].used

    def rebuilt(self, votes: VoteTable) -> dict:
        """Every board of a vote table, computed without touching the live ones (the Space
        computes them off the vote path, then :meth:`adopt` swaps them in)."""
        tracks = {}
        for category in self._tracks:
            sel = select_votes(votes, self.arena.id, category=category, entrants=self.entrants,
                               params=self.params)  # fmt: skip
            elo, counts = sel.replay(self.params)
            tracks[category] = _Track(elo=elo, counts=counts, used=len(sel.a),
                                      history=_History(sel.a, sel.b, sel.outcome, sel.ts_us),
                                      last_ts_us=sel.last_ts_us, skipped=sel.skipped)  # fmt: skip
        return tracks

    def adopt(self, tracks: dict) -> None:
        """Make boards from :meth:`rebuilt` the live ones."""
        with self._lock:
            self._tracks = tracks
            self.generation += 1

    def apply(self, vote: Vote, *, excluded: bool = False) -> EloStep | None:
        """Count one logged vote; the arena-wide Elo step, or None if it is not counted.

        ``excluded``: its voter is flagged as anomalous (the vote carries no flag: it was
        written before anyone knew), so it is left out as a replay leaves it out."""
        if vote.arena != self.arena.id:
            raise ValueError(f"vote for arena {vote.arena!r} applied to {self.arena.id!r}")
        kind, judge = self.params.voter_kind, self.params.judge
        if kind is not None and (vote.voter_kind or "human") != kind:
            return None  # another board's voters (select_votes filters them likewise)
        if judge is not None and vote.judge != judge:
            return None
        a, b = self.index.get(vote.model_a), self.index.get(vote.model_b)
        reason = UNKNOWN_MODEL if a is None or b is None else None
        if vote.flags and not self.params.include_flagged:
            reason = FLAGGED
        elif excluded and not self.params.include_flagged:
            reason = ANOMALOUS_VOTER  # after FLAGGED, before UNKNOWN_MODEL, as select_votes
        ts_us = parse_ts(vote.ts)
        outcome = OUTCOME[vote.vote]
        with self._lock:
            tracks = [self._tracks[None]]
            if vote.category is not None and vote.category in self._tracks:
                tracks.append(self._tracks[vote.category])
            if reason:
                for track in tracks:
                    track.skipped[reason] += 1
                    track.version += 1  # the board shows the skipped counts: not the cached one
                return None
            steps = []
            for track in tracks:
                steps.append(track.elo.step(a, b, outcome))
                track.counts.add(a, b, outcome)
                track.history.append(a, b, outcome, ts_us)
                track.used += 1
                track.last_ts_us = ts_us
                track.version += 1
            return steps[0]

    def battles(self) -> np.ndarray:
        """Battles so far between each pair (arena-wide), for matchmaking."""
        with self._lock:
            return self._tracks[None].counts.battles()

    def pair_counts(self, category: str | None = None, window: Window = ALL_TIME) -> PairCounts:
        """A copy of a board's pair counts (for the win-rate and battle-count charts)."""
        with self._lock:
            track = self._tracks[category]
            if window.all_time:
                return track.counts.copy()
            sel = track.history.selection(self.entrants, window)
        return count_pairs(len(self.entrants), sel.a, sel.b, sel.outcome)

    def board(self, category: str | None = None, skipped: Counter | None = None, *,
              window: Window = ALL_TIME, available: Mapping[str, bool] | None = None) -> Board:  # fmt: skip
        """The board, recomputed only if a vote arrived since it was last asked for.

        ``window`` limits it to votes of a time window; ``available`` marks the
        models that can run here (see :func:`~arena_core.leaderboard.standings`).
        """
        key = (window, tuple(sorted((available or {}).items())),
               tuple(sorted((skipped or {}).items())))  # fmt: skip
        with self._lock:
            track = self._tracks[category]
            version, dropped = track.version, Counter(track.skipped)
            if (version, key) in track.cached:
                return track.cached[version, key]
            sel = None
            if not window.all_time or self.params.half_life_days is not None:
                sel = track.history.selection(self.entrants, window)
            if window.all_time:
                elo = EloState(list(track.elo.ratings), list(track.elo.battles), track.elo.params)
                counts, used, last = track.counts.copy(), track.used, track.last_ts_us
        if not window.all_time:
            (elo, counts), used, last = sel.replay(self.params), len(sel.a), sel.last_ts_us
        fit_counts = sel.fit_counts(self.params) if sel is not None else None
        result = standings(self.entrants, elo, counts, self.params, fit_counts=fit_counts,
                           available=available)  # fmt: skip
        board = make_board(self.arena.id, category, self.params, result, votes_used=used,
                           skipped=Counter(skipped or {}) + dropped, last_ts_us=last,
                           window=window, counts=counts)  # fmt: skip
        with self._lock:
            if self._tracks.get(category) is track and track.version == version:
                track.cached = {k: v for k, v in track.cached.items() if k[0] == version}
                track.cached[version, key] = board
        return board
