"""Per-prompt complementarity: which pairs of models win on different prompts.

Two models whose strengths lie on different prompts can be combined (a router picks
one per prompt); two that find the same prompts hard leave nothing to combine. For
each pair of models this measures, over the prompts both were judged on, the Spearman
correlation of their per-prompt scores and the **oracle gain**: how much a router that
knew, on every prompt, which of the two does better would score above the better model
alone. Everything is on one scale a reader knows, the **win rate against the field**:
a model's expected score (a draw counting half) against an opponent drawn uniformly
from the other models of the arena.

Per-prompt score
----------------
A model's raw mean outcome on a prompt is confounded by whom it met there: three
votes against the strongest model say less about the prompt than three against the
weakest. So each vote is scored as a residual, the outcome minus its expectation
under the arena's global Bradley-Terry fit (:func:`~arena_core.ratings.bt.bradley_terry`
on all the votes), and a model's score on prompt ``p`` is::

    s_ip = w_i + mean over i's votes on p of (y - sigma(theta_i - theta_opponent))

where ``w_i`` is its win rate against the field under the global fit. A residual has
expectation zero, whatever the opponent, when the model is exactly as strong on ``p``
as overall, so ``s_ip`` is unbiased for ``w_i`` under "no prompt effect" for any mix of
opponents, and otherwise moves by the model's excess score on ``p``. The alternative
of comparing two models only through the opponents both met on ``p``
throws away most votes when each prompt sees a few battles; the residual uses them all.

For a pair ``(i, j)`` both scores are taken against the **rest of the field** (the
models other than i and j): the votes between i and j are left out, because in such a
vote one side's residual is exactly minus the other's, which would make the two scores
anti-correlated by construction (a negative Spearman, and a larger gain, for any two
models that meet often); and ``w`` becomes the win rate against the rest of the field.
A prompt is **shared** when both have a vote against a third model on it; ``overlap``
counts the shared prompts.

Oracle gain, its noise floor, and the flag
------------------------------------------
With ``d_p = s_ip - s_jp`` on the shared prompts, the naive gain is::

    mean_p max(s_ip, s_jp) - max(mean_p s_ip, mean_p s_jp) = (mean_p |d_p| - |mean_p d_p|) / 2

the mean over prompts of how much the weaker model beats the stronger where it does.
It is never negative, and it is positive even for two identical models: noise moves
``d_p`` around zero and ``max`` keeps the favourable side. The true gain is zero exactly
when one model is at least as strong as the other on every prompt (``d_p`` of one sign),
and among those cases the noise inflates the naive gain most when ``d_p = 0`` on every
prompt (``E|d + e| - |d|`` is largest at ``d = 0``). So the **noise floor** is the naive
gain of two models equally strong on every prompt, with this pair's own noise: every
vote is redrawn from the global fit (same battles on the same prompts, draws at the
arena's fitted rate), the pair's scores are recomputed and centred on zero, ``rounds``
times. ``p_value`` is the share of those null gains at or above the observed one, and a
pair is ``flagged`` when it is at most ``alpha``: a pair with no true gain is flagged
with probability at most about ``alpha``, whatever its strength gap (a null centred on
the pair's fitted gap instead would flag a pair whose models tie on easy prompts and
differ on hard ones; ``python -m arena_core simulate --scenario complementarity``
measures both rates).

No estimator of the gain is unbiased under noise (nor can be: ``|x|`` has no unbiased
estimator at ``x = 0``), so it is bracketed. Noise inflates both terms of the naive
gain, ``mean|d_p| / 2`` by at most its null mean ``A`` and ``|mean d_p| / 2`` by at most
its null mean ``B`` (both largest at ``d = 0``). ``noise_gain = A - B`` is the naive gain
two models equal on every prompt show on average, and ``oracle_gain = naive_gain -
noise_gain`` is about zero for them; it is negative for two models a constant gap apart
and an underestimate for a complementary pair (severely when each prompt has only a
few votes: the floor is then large). The interval resamples the shared prompts
(``rounds`` times, percentile) and widens the naive gain's interval by the two bounds:
from its low end minus ``A`` (all of the first term's inflation is noise, none of the
second's) to its high end plus ``B`` (the reverse), so it covers the true gain whether
or not the pair is complementary (the scenario measures it). Votes within a prompt
are not resampled as well: resampling the prompts alone carries their vote noise into
the spread of a mean over prompts (the "ultimate cluster" variance of two-stage
sampling), and resampling both stages would count it twice; neither removes the
inflation, which is why the floor is measured apart. The flag is the test above, not
the interval, which is wider: a flagged pair may have ``gain_low < 0``.

The null fixes the global strengths at their fitted values; per-prompt strengths of
other models (a specialist met on some prompts only) are not modelled, and add a
little variance the null does not see (the scenario has such specialists).

Everything works on integer indices (models ``0 .. n_items - 1``, prompts
``0 .. n_prompts - 1``); names are mapped by the caller
(:mod:`arena_core.analysis.insights`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena_core.analysis.shared_prompts import SharedPrompts
from arena_core.ratings.bt import BTParams, bradley_terry, sigmoid
from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, SCORE_A, TIE, count_pairs
from arena_core.ratings.scale import to_theta
from arena_core.simulation.synthetic import Truth, spearman

#: Fewest shared prompts for a pair to be measured (CLI ``--min-overlap``).
MIN_OVERLAP = 10
#: Replicates of the null and of the prompt bootstrap (CLI ``--rounds``).
ROUNDS = 1000
#: Votes' worth of prior around the anchor in the global fit: keeps a model that never
#: lost finite without moving the others (this is a yardstick, not a board).
PRIOR_WEIGHT = 1.0
#: Highest draw rate between equals the outcome model allows (:class:`Truth`).
_MAX_DRAW_RATE = 0.5
#: Slack when comparing a null gain with the observed one: the same sums taken in
#: another order must not turn a tie into a miss.
_TIE_SLACK = 1e-12
#: Scores are rounded to this many decimals before ranking: equal scores summed in another
#: order differ in the last bit, and must still tie.
_RANK_DIGITS = 12
#: Vote draws held in memory at once by the null (replicates x votes).
_DRAWS_PER_CHUNK = 2_000_000


@dataclass(frozen=True)
class PromptVotes:
    """Votes as parallel integer arrays: model a, model b, outcome code, prompt index."""

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    prompt: np.ndarray

    def __post_init__(self):
        n = len(self.a)
        if not len(self.b) == len(self.outcome) == len(self.prompt) == n:
            raise ValueError("a, b, outcome and prompt must have one entry per vote")
        if np.any(np.asarray(self.a) == np.asarray(self.b)):
            raise ValueError("a vote needs two different models")
        if n and (np.min(self.outcome) < 0 or np.max(self.outcome) > BOTH_BAD):
            raise ValueError("outcome codes are 0..3 (arena_core.ratings.counts.OUTCOME_NAMES)")
        if n and min(np.min(self.a), np.min(self.b), np.min(self.prompt)) < 0:
            raise ValueError("model and prompt indices must be >= 0")

    @classmethod
    def from_arrays(cls, a, b, outcome, prompt) -> PromptVotes:
        return cls(*(np.asarray(x, dtype=np.int64) for x in (a, b, outcome, prompt)))

    @property
    def n_prompts(self) -> int:
        return int(self.prompt.max()) + 1 if len(self.prompt) else 0


@dataclass(frozen=True)
class ComplementarityParams:
    """Settings of :func:`complementarity`."""

    min_overlap: int = MIN_OVERLAP
    rounds: int = ROUNDS
    #: Level of the gain's interval.
    level: float = 0.95
    #: Largest p-value that flags a pair: the false-positive rate per pair.
    alpha: float = 0.05
    prior_weight: float = PRIOR_WEIGHT

    def __post_init__(self):
        if self.min_overlap < 2:
            raise ValueError(f"min_overlap must be at least 2, got {self.min_overlap}")
        if not 0.0 < self.level < 1.0 or not 0.0 < self.alpha < 1.0:
            raise ValueError("level and alpha must lie strictly between 0 and 1")
        if 1.0 / (self.rounds + 1) > self.alpha:
            raise ValueError(f"{self.rounds} rounds can never give a p-value at or below "
                             f"alpha {self.alpha}: use at least {int(np.ceil(1 / self.alpha)) - 1}")  # fmt: skip


@dataclass(frozen=True)
class PairComplementarity:
    """One pair of models (``a < b``, indices) on their shared prompts; gains in win rate."""

    a: int
    b: int
    overlap: int
    spearman: float
    #: Mean of the per-prompt max minus the better mean, noise included (never negative).
    naive_gain: float
    #: The naive gain two models equally strong on every prompt show, with this pair's noise.
    noise_gain: float
    #: ``naive_gain - noise_gain``: about zero without a true gain, low for a true one.
    oracle_gain: float
    #: An interval for the true gain that allows for either reading of the noise.
    gain_low: float
    gain_high: float
    p_value: float
    flagged: bool


@dataclass(frozen=True)
class Complementarity:
    """Per-prompt scores of every model and the measured pairs.

    ``scores[i, p]`` is model i's win rate against the field on prompt p from all its
    votes there (NaN without one), ``votes[i, p]`` their number, ``field_score[i]`` its
    overall win rate against the field (NaN if it never played). ``too_few`` counts
    the pairs of models that played but share fewer than ``min_overlap`` prompts.
    """

    field_score: np.ndarray
    scores: np.ndarray
    votes: np.ndarray
    draw_rate: float
    pairs: tuple[PairComplementarity, ...]
    too_few: int


def oracle_gain(scores_i, scores_j) -> float:
    """Naive oracle gain of two score arrays over the same prompts (see the module docstring).

    ``mean(max(s_i, s_j)) - max(mean(s_i), mean(s_j))``, computed as
    ``(mean|d| - |mean d|) / 2`` with ``d = s_i - s_j``.
    """
    d = np.asarray(scores_i, float) - np.asarray(scores_j, float)
    if d.size == 0:
        raise ValueError("no prompts to compare")
    return float((np.abs(d).mean() - abs(d.mean())) / 2.0)


def complementarity(n_items: int, votes: PromptVotes, params: ComplementarityParams | None = None,
                    *, rng: np.random.Generator | None = None) -> Complementarity:  # fmt: skip
    """Per-prompt scores, and every pair's Spearman and oracle gain with its null and interval.

    Parameters
    ----------
    n_items : int
        Number of models (indices in ``votes`` are below it).
    votes : PromptVotes
    params : ComplementarityParams, optional
    rng : numpy.random.Generator, optional
        Draws the null's votes and the bootstrap's prompts (default: seed 0).
    """
    params = params or ComplementarityParams()
    rng = rng if rng is not None else np.random.default_rng(0)
    if len(votes.a) == 0:
        nothing = np.zeros((n_items, 0))
        return Complementarity(
            np.full(n_items, np.nan), nothing, nothing.astype(np.int64), 0.0, (), 0
        )
    if max(votes.a.max(), votes.b.max()) >= n_items:
        raise ValueError(f"model index out of range for {n_items} models")
    ratings = bradley_terry(n_items, count_pairs(n_items, votes.a, votes.b, votes.outcome),
                            params=BTParams(prior_weight=params.prior_weight))  # fmt: skip
    theta = to_theta(ratings)
    expected = sigmoid(theta[votes.a] - theta[votes.b])
    played = _played(n_items, votes)
    field = field_scores(theta, played)
    observed = np.asarray(SCORE_A)[votes.outcome] - expected
    scores, counts = _model_scores(n_items, votes, observed, field)
    draw_rate = _draw_rate(votes.outcome, expected)
    layout = SharedPrompts.build(n_items, votes, counts, params.min_overlap)
    if layout.n_pairs == 0:
        return Complementarity(field, scores, counts, draw_rate, (), layout.too_few)
    rest = rest_of_field(theta, played)
    s_i, s_j = layout.pair_scores(observed[None], rest)
    spread, centre = _null_terms(layout, votes, ratings, draw_rate, params.rounds, rng)
    pairs = _measure_pairs(layout, s_i[0], s_j[0], spread, centre, params, rng)
    return Complementarity(field, scores, counts, draw_rate, pairs, layout.too_few)


def _measure_pairs(
    layout, s_i, s_j, spread, centre, params, rng
) -> tuple[PairComplementarity, ...]:
    """Each pair's statistics from its entries' observed scores and the null's gain terms."""
    naive = np.subtract(*layout.gain_terms((s_i - s_j)[None]))[0]
    null = spread - centre
    pairs = []
    for k in range(layout.n_pairs):
        span = slice(layout.starts[k], layout.stops[k])
        floor_abs, floor_mean = float(spread[:, k].mean()), float(centre[:, k].mean())
        low, high = _interval(s_i[span] - s_j[span], params, rng)
        p_value = float((1 + np.sum(null[:, k] >= naive[k] - _TIE_SLACK)) / (1 + params.rounds))
        pairs.append(PairComplementarity(
            int(layout.pair_i[k]), int(layout.pair_j[k]), int(span.stop - span.start),
            spearman(*np.round([s_i[span], s_j[span]], _RANK_DIGITS)), float(naive[k]),
            floor_abs - floor_mean, float(naive[k]) - floor_abs + floor_mean,
            low - floor_abs, high + floor_mean, p_value, p_value <= params.alpha))  # fmt: skip
    return tuple(pairs)


def field_scores(theta: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Each model's expected score against a uniformly drawn other model that played
    (``theta`` in natural log-odds); NaN for a model that did not play."""
    p = sigmoid(theta[:, None] - theta[None, :])
    mask = played[None, :] & ~np.eye(len(theta), dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        field = (p * mask).sum(axis=1) / mask.sum(axis=1)
    return np.where(played, field, np.nan)


def rest_of_field(theta: np.ndarray, played: np.ndarray) -> np.ndarray:
    """``rest[i, j]``: model i's expected score against a uniformly drawn model that played,
    other than i and j (the yardstick of the pair (i, j)); NaN where there is none."""
    p = sigmoid(theta[:, None] - theta[None, :]) * played[None, :]
    np.fill_diagonal(p, 0.0)
    others = played.sum() - played[:, None] - played[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = (p.sum(axis=1)[:, None] - p) / others
    return np.where((others > 0) & played[:, None] & played[None, :], rest, np.nan)


def _played(n_items: int, votes: PromptVotes) -> np.ndarray:
    return np.bincount(np.r_[votes.a, votes.b], minlength=n_items) > 0


def _model_scores(n_items, votes, residual, field) -> tuple[np.ndarray, np.ndarray]:
    """Every model's score per prompt from all its votes there, and the vote counts."""
    n_p = votes.n_prompts
    cells = n_items * n_p
    ia, ib = votes.a * n_p + votes.prompt, votes.b * n_p + votes.prompt
    sums = np.bincount(ia, residual, cells) - np.bincount(ib, residual, cells)
    counts = np.bincount(ia, minlength=cells) + np.bincount(ib, minlength=cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = field[:, None] + (sums / counts).reshape(n_items, n_p)
    return np.where(counts.reshape(n_items, n_p) > 0, scores, np.nan), counts.reshape(n_items, n_p)


def _draw_rate(outcome: np.ndarray, expected: np.ndarray) -> float:
    """The draw rate between equals that explains the observed draws under :class:`Truth`'s
    model (draws ``= rate * 4 p (1 - p)``), capped where that model stays valid."""
    drawn = np.isin(outcome, (TIE, BOTH_BAD)).sum()
    room = (4.0 * expected * (1.0 - expected)).sum()
    return float(min(drawn / room, _MAX_DRAW_RATE)) if room > 0 else 0.0


def _null_terms(layout, votes, ratings, draw_rate, rounds, rng) -> tuple[np.ndarray, np.ndarray]:
    """(rounds, pairs) arrays of the two terms of the naive gain (:meth:`SharedPrompts.gain_terms`)
    for two models equally strong on every prompt, with each pair's own noise: every vote
    redrawn from the global fit, each pair's scores centred (their yardsticks left out, so
    ``d_p`` is noise around zero)."""
    centred = np.zeros((layout.n_items, layout.n_items))
    probs = Truth(ratings, draw_rate=draw_rate, both_bad_share=0.0).outcome_probabilities(
        votes.a, votes.b)  # fmt: skip
    win, lose = probs[:, A_WINS], probs[:, B_WINS]
    expected = 0.5 * (1.0 + win - lose)  # a draw counts half
    win_or_draw = 1.0 - lose
    chunk = max(1, _DRAWS_PER_CHUNK // max(1, len(votes.a)))
    spread, centre = [], []
    for done in range(0, rounds, chunk):
        u = rng.random((min(chunk, rounds - done), len(votes.a)))
        score = np.where(u < win, 1.0, np.where(u < win_or_draw, 0.5, 0.0))
        s_i, s_j = layout.pair_scores(score - expected, centred)
        terms = layout.gain_terms(s_i - s_j)
        spread.append(terms[0])
        centre.append(terms[1])
    return np.concatenate(spread), np.concatenate(centre)


def _interval(d: np.ndarray, params: ComplementarityParams, rng) -> tuple[float, float]:
    """Percentile interval of the naive gain over prompt resamples."""
    m = len(d)
    picks = d[rng.integers(0, m, (params.rounds, m))]
    boot = (np.abs(picks).mean(axis=1) - np.abs(picks.mean(axis=1))) / 2.0
    tail = 50.0 * (1.0 - params.level)
    low, high = np.percentile(boot, [tail, 100.0 - tail])
    return float(low), float(high)
