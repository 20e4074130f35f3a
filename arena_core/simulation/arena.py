"""One simulated arena under one sampler: pairs drawn, outcomes sampled, the board refitted.

The engine of :mod:`arena_core.simulation.matchmaking`. Outcomes use common
random numbers: each pair has its own seeded stream of uniform numbers and its
k-th meeting takes the k-th, so two samplers run on the same seed see the same
result whenever they stage the same meeting.
"""

from __future__ import annotations

import numpy as np

from arena_core.matchmaking import Recent, draw_pair, fit_snapshot
from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, TIE, PairCounts, count_pairs
from arena_core.ratings.scale import ANCHOR
from arena_core.simulation.synthetic import Truth, evenly_spread, quota_pairs

#: Outcome codes seen from the other side (a win for a is a win for b when sides swap).
_FLIPPED = np.array([B_WINS, A_WINS, TIE, BOTH_BAD])
#: Uniform numbers drawn at once for a pair's outcome stream (extended when used up).
_STREAM_CHUNK = 128
#: The samplers an arena can run: random pairs, the project's matchmaker, a fixed split.
SAMPLERS = ("uniform", "matchmaking", "fixed")


class SimArena:
    """The running state of one simulated arena under ``sampler`` (one of :data:`SAMPLERS`).

    ``setup`` is a :class:`arena_core.simulation.matchmaking.Setup`; models in
    ``absent`` are not drawn until removed from it. After :meth:`refit`,
    ``ratings``, ``low`` and ``high`` are the board's (its posterior, as the
    Space computes it) on the votes so far. The "fixed" sampler plays the
    ``shares`` of votes per pair (``(n, n)``, above the diagonal) by
    :func:`~arena_core.simulation.synthetic.quota_pairs`, sides at random: a
    design chosen in advance, e.g. with the truth known
    (``bench/matchmaking_bound.py``). ``rules`` (weights, groups that never meet) and
    ``truth`` (default: ``setup``'s models spread evenly) serve the tests of the registry's
    rules and of lopsided boards.
    """

    def __init__(self, setup, sampler: str, seed: int, absent=(), shares=None, *, rules=None,
                 truth: Truth | None = None):  # fmt: skip
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {sampler!r}")
        if (sampler == "fixed") != (shares is not None) or (sampler == "fixed" and absent):
            raise ValueError("the fixed sampler, and only it, takes shares (and no absent models)")
        if setup.board.prior_weight == 0:
            raise ValueError(
                "the simulation fits the board's posterior: prior_weight must not be 0"
            )
        self.setup, self.sampler, self.seed = setup, sampler, seed
        n = setup.models
        self.truth = truth or Truth(evenly_spread(n, setup.spread), draw_rate=setup.draw_rate)
        self.rules = rules  # the registry's weights and groups (matchmaking.Rules), if any
        self.prior = np.full(n, ANCHOR)
        self.rng_pairs = np.random.default_rng([seed, 1])
        self.rng_drift = np.random.default_rng([seed, 2])
        self.counts = PairCounts.zeros(n)
        self.battles = np.zeros((n, n), dtype=np.int64)
        self.a = np.zeros(setup.votes, dtype=np.int64)
        self.b = np.zeros(setup.votes, dtype=np.int64)
        self.recent = np.zeros(n, dtype=np.int64)
        # The matchmaker's outcomes are known at each draw, for a sampler that follows them.
        self.outcome = np.zeros(setup.votes, dtype=np.int64)
        self.scores = np.zeros((n, n))  # half-win score of the row against the column
        self.t = 0
        self.absent = set(absent)
        self.ratings = self.prior.copy()
        self.low = self.high = np.full(n, np.nan)
        self.snap = None
        if sampler == "fixed":
            first, second = quota_pairs(shares, setup.votes)
            swap = self.rng_pairs.random(setup.votes) < 0.5
            self.a[:] = np.where(swap, second, first)
            self.b[:] = np.where(swap, first, second)
        self._meetings: dict[tuple[int, int], int] = {}
        self._streams: dict[tuple[int, int], np.ndarray] = {}

    @property
    def candidates(self) -> list[int]:
        return [i for i in range(self.setup.models) if i not in self.absent]

    def refit(self) -> None:
        """The board on the votes so far, and the sampler's snapshot of it."""
        board = self.setup.board
        weights = None if self.rules is None else self.rules.weights
        post, self.snap = fit_snapshot(self.counts, self.prior, prior_weight=board.prior_weight,
                                       params=self.setup.match, weights=weights)  # fmt: skip
        self.ratings = post.mean
        self.low, self.high = post.interval(board.ci_level)

    def play(self, votes: int) -> None:
        """Draw ``votes`` pairs from the current fit, then their outcomes; drift the truth."""
        every = getattr(self.setup, "snapshot_votes", 0)
        if self.sampler == "matchmaking" and 0 < every < votes:
            # The sampler's snapshot alone is refreshed between the board's refits.
            done = 0
            while done < votes:
                if done:
                    self._refresh_snapshot()
                step = min(every, votes - done)
                self._play(step)
                done += step
            self._drift(votes)
            return
        self._play(votes)
        self._drift(votes)

    def _refresh_snapshot(self) -> None:
        """The sampler's snapshot on the votes so far; the board (``ratings``, intervals) stays."""
        board = self.setup.board
        weights = None if self.rules is None else self.rules.weights
        _, self.snap = fit_snapshot(self.counts, self.prior, prior_weight=board.prior_weight,
                                    params=self.setup.match, weights=weights)  # fmt: skip

    def _play(self, votes: int) -> None:
        start, stop = self.t, self.t + votes
        if self.sampler == "matchmaking":
            for t in range(start, stop):
                self._draw(t)
        else:  # the fixed sampler's pairs were all drawn at the start
            if self.sampler == "uniform":
                cand = np.asarray(self.candidates)
                first = self.rng_pairs.integers(0, len(cand), votes)
                second = (first + self.rng_pairs.integers(1, len(cand), votes)) % len(cand)
                self.a[start:stop], self.b[start:stop] = cand[first], cand[second]
            np.add.at(self.battles, (self.a[start:stop], self.b[start:stop]), 1)
            np.add.at(self.battles, (self.b[start:stop], self.a[start:stop]), 1)
        a, b = self.a[start:stop], self.b[start:stop]
        if self.sampler == "matchmaking":
            outcome = self.outcome[start:stop]
        else:
            outcome = self._outcomes(a, b)
        step = count_pairs(self.setup.models, a, b, outcome)
        self.counts = PairCounts(self.counts.wins + step.wins, self.counts.ties + step.ties,
                                 self.counts.both_bad + step.both_bad)  # fmt: skip
        self.t = stop

    def settled(self, models) -> bool:
        """Whether ``models`` are all ``established`` on the board as of the last refit."""
        board, models = self.setup.board, np.asarray(list(models))
        if np.any(self.battles.sum(axis=1)[models] < board.established_min_battles):
            return False
        return bool(np.all((self.high - self.low)[models] <= board.established_ci_width))

    def _draw(self, t: int) -> None:
        window = self.setup.match.window
        recent = Recent(self.recent, min(t, window))
        a, b = draw_pair(self.snap, self.battles, self.candidates, self.rng_pairs, recent=recent,
                         rules=self.rules, params=self.setup.match, scores=self.scores)  # fmt: skip
        self.a[t], self.b[t] = a, b
        # The k-th meeting of a pair takes its k-th number, whenever it is computed.
        code = int(self._outcomes(np.array([a]), np.array([b]))[0])
        self.outcome[t] = code
        score_a = 1.0 if code == A_WINS else 0.0 if code == B_WINS else 0.5
        self.scores[a, b] += score_a
        self.scores[b, a] += 1.0 - score_a
        self.battles[a, b] += 1
        self.battles[b, a] += 1
        self.recent[[a, b]] += 1
        if t >= window:
            self.recent[[self.a[t - window], self.b[t - window]]] -= 1

    def _outcomes(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Outcome codes of these battles: a pair's k-th meeting takes its k-th number."""
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        u = np.empty(len(a))
        for k, key in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
            nth = self._meetings.get(key, 0)
            stream = self._streams.get(key)
            if stream is None or nth >= len(stream):
                # A longer draw from the same seed starts with the same numbers.
                size = 2 * max(nth, _STREAM_CHUNK)
                stream = self._streams[key] = np.random.default_rng([self.seed, 5, *key]).random(
                    size
                )
            u[k] = stream[nth]
            self._meetings[key] = nth + 1
        cumulative = self.truth.outcome_probabilities(lo, hi).cumsum(axis=-1)
        code = np.minimum((u[:, None] >= cumulative).sum(axis=-1), 3)
        return np.where(a == lo, code, _FLIPPED[code]).astype(np.int64)

    def _drift(self, votes: int) -> None:
        if self.setup.drift <= 0:
            return
        sd = self.setup.drift * np.sqrt(votes / 1000.0)
        step = self.rng_drift.normal(0.0, sd, self.setup.models)
        self.truth = Truth(self.truth.ratings + step - step.mean(), self.truth.draw_rate,
                           self.truth.both_bad_share)  # fmt: skip
