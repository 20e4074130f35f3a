"""Which two models fight next: each vote goes where it teaches the board most.

Votes are scarce. The sampler draws from a :class:`Snapshot` of the last
Bradley-Terry fit (ratings and their covariance ``S``, e.g. the inverse Fisher
information, :func:`~arena_core.matchmaking.refit.fisher_covariance`; the fit is
:mod:`arena_core.matchmaking.refit`) and the live battle counts. Each
information draw serves one of two goals, in proportions set by how settled the
ranking is:

* **The ranking** (close calls first). Pair (i, j) is worth
  ``(2 P_ij)^sharpness * h s2 / (1 + h s2)``: ``P_ij = Phi(-|gap| / sd)`` is
  the chance the board has the pair the wrong way round, ``s2`` the variance of
  the gap and ``h = p (1 - p)`` the Fisher information of one battle, so the
  second factor is the share of the gap's variance one vote removes. A high
  ``sharpness`` puts the votes on adjacent models whose intervals overlap, not
  on pairs already told apart. Part of these draws are posterior draws:
  sample ratings from ``N(fit, S)``, take a model that lands far from its place
  on the board (chance by squared displacement), and pair it with one it
  changed places with: the board checks whether it is in the right place.
  [Chatbot Arena's active sampling (Chiang et al., 2024, sec. 5) weighs pairs by
  the variance one vote removes; the misorder weight aims that at the ranking.]
* **The intervals** (the widest first). A battle of i and j removes
  ``h (c' S u)^2 / (1 + h u' S u)`` from the variance of any contrast ``c``
  (``u = e_i - e_j``: the rank-one update of a Gaussian posterior). Summed over
  each model's interval (``theta_k - mean theta``), relative to its variance and
  weighted by ``(var_k / max var)^focus``, that is ``h (G_ii + G_jj - 2 G_ij) /
  (1 + h s2)`` with ``G = S C W C S``: one matrix product per fit. Sampling in
  proportion to it is a randomised Frank-Wolfe step towards the design that
  shrinks the widest interval fastest.

The interval share is ``interval_share * clip(2 (1 - u), 0, 1)`` with ``u`` the
expected ``1 - rho`` of the board over ``1 - settled_rho``: votes chase the order
first and the intervals once the order holds. By default the expected rho is the
shortcut ``E[sum d^2] ~ 2 sum P``, which is about half the exact
``2 sum |r_k - r_l| P_kl`` (``exact_rho``), so the switch comes near an expected
rho of 0.96; measured, that trade is the better one for now (``MatchParams``). Votes since
the fit shrink a pair's variance as ``s2 / (1 + m h s2)`` after ``m`` battles,
so no pair is drawn over and over before the next refit (``track_votes`` also moves
the gaps with the outcomes since the fit, :mod:`arena_core.matchmaking.track`; measured,
a fresher state saves no votes). The pair values are computed in
:mod:`arena_core.matchmaking.value`.

Around the information draws:

* **Newcomers.** A model with fewer than ``newcomer_battles`` battles (and than
  half the median) is one side of ``newcomer_share`` of the draws, the least
  battled first, against the opponents it met least: spread over the board.
* **Exposure.** From :class:`Recent` (battles per model over the last votes, of
  the prompt's category) a model under ``floor`` of its share is drawn first
  with ``lift`` times its share, so it climbs back fast; one over ``cap`` times
  its share is held back.
* **Operator rules** (:class:`Rules`, from the registry): per-model weights
  scale a model's pairs and its share; groups in ``never_paired`` never meet.
* **Category.** The caller passes only models that speak the prompt's language.

Which side is "A" is a coin flip. Everything is a pure function of its
arguments and the injected ``numpy.random.Generator``; the Space keeps the
state (:mod:`arena_core.space.pairing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arena_core.matchmaking.track import advance
from arena_core.matchmaking.value import (
    TINY_VAR,
    expected_spearman,
    interval_value,
    rank_value,
    shortcut_spearman,
    sigmoid,
)
from arena_core.ratings.scale import to_theta


class NoPairError(ValueError):
    """Fewer than two models can be paired right now."""


@dataclass(frozen=True)
class MatchParams:
    """Settings of the sampler; the defaults are the ones the simulation measured."""

    #: A model with fewer battles than this, and than half the median, is a newcomer.
    newcomer_battles: int = 20
    #: Share of draws that go to a newcomer while there is one.
    newcomer_share: float = 0.5
    #: Votes of the exposure window the caller keeps (:class:`Recent`).
    window: int = 250
    #: Under this fraction of its share over the window, a model is drawn first.
    floor: float = 0.6
    #: A model under the floor is drawn first with this multiple of its share, until it is over.
    lift: float = 3.0
    #: Over this multiple of its share over the window, a model's pairs are held back.
    cap: float = 2.5
    #: Exponent on the chance a pair is misordered: higher chases the closest calls.
    sharpness: float = 4.0
    #: Share of the ranking draws made by sampling ratings from the posterior.
    posterior_share: float = 0.25
    #: Share of draws spent on the widest intervals once the ranking is settled.
    interval_share: float = 1.0
    #: The ranking is settled when its expected Spearman rho with the truth reaches this: the
    #: interval draws start there and take every information draw at half its ``1 - rho``.
    settled_rho: float = 0.98
    #: Whether that expected rho is the exact one (:func:`expected_spearman`) or the
    #: shortcut ``2 sum P``, about half the displacement (:func:`shortcut_spearman`). Over
    #: the 60 seeds of ``simulate``, exact at 0.98 (0.97) saves 39% (34%) of the votes to a
    #: sustained rho >= 0.98 against the shortcut's 31%, but 24% (24%) to rho >= 0.95
    #: against 25% and 10% (13%) to every model established against 14%: the shortcut
    #: stays the default while a target would slip (README, Matchmaking).
    exact_rho: bool = False
    #: How much the widest intervals count over the others (exponent on variance ratios).
    interval_focus: float = 8.0
    #: Interval width (points) under which a model is settled (the board's ``established``).
    target_width: float = 50.0
    #: Votes between refits of the snapshot (the Space and the simulation both use it).
    refit_votes: int = 25
    #: Fold the votes since the fit (their outcomes, not only their count) into the snapshot
    #: at each draw (:mod:`arena_core.matchmaking.track`), when the caller passes the scores.
    #: Off: paired with the default over seeds 0-59 and 60-119 (6,000 votes), it moved the
    #: votes to a sustained rho >= 0.98 by -138 +- 97 and -22 +- 71 (-80 +- 60 over all 120)
    #: and to rho >= 0.95 by +25 +- 26 and -4 +- 25: nothing beyond the noise, and no more
    #: than a refit every 5 votes gives (README, Matchmaking).
    track_votes: bool = False

    def __post_init__(self):
        if min(self.newcomer_battles, self.window - 1, self.refit_votes - 1) < 0:
            raise ValueError("newcomer_battles must be >= 0, window and refit_votes >= 1")
        for name in ("newcomer_share", "floor", "posterior_share", "interval_share", "settled_rho"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]")
        if self.lift < 1:
            raise ValueError("lift must be >= 1")
        if self.cap < 1 or self.sharpness <= 0 or self.target_width <= 0 or self.interval_focus < 0:
            raise ValueError("cap must be >= 1; sharpness, target_width > 0; interval_focus >= 0")


#: The defaults, built once (a draw must not pay for validating them).
_DEFAULTS = MatchParams()


@dataclass(frozen=True)
class Rules:
    """Operator rules over model indices: pick weights and pairs that must never meet."""

    #: Relative weight of each model (1 = normal); scales its pairs and its exposure share.
    weights: np.ndarray
    #: ``blocked[i, j]``: i and j are never paired (the diagonal is always blocked).
    blocked: np.ndarray
    #: ``weights_i * weights_j``, or 0 where blocked: the factor every draw applies.
    pair_weight: np.ndarray

    @classmethod
    def build(cls, n_items: int, weights=None, never=()) -> Rules:
        """Rules for ``n_items`` models; ``never`` lists groups whose members never meet."""
        w = np.ones(n_items) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (n_items,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights must be {n_items} positive numbers")
        w = w / w.max()  # relative: equal weights of 1e-170 gave pair weights of 0 (no pair)
        blocked = np.eye(n_items, dtype=bool)
        for group in never:
            g = np.asarray(list(group), dtype=np.int64)
            blocked[np.ix_(g, g)] = True
        return cls(w, blocked, np.outer(w, w) * ~blocked)


@dataclass(frozen=True)
class Recent:
    """Battles per model over the last ``votes`` votes (the exposure window)."""

    battles: np.ndarray
    votes: int


@dataclass(frozen=True)
class Snapshot:
    """What the sampler knows from the last fit; built by :func:`snapshot`."""

    #: Rating of each model (points) and the battle counts the fit saw.
    ratings: np.ndarray
    battles: np.ndarray
    #: Per pair: rating gap (natural log-odds), variance of the gap, information of a battle.
    gap: np.ndarray
    s2: np.ndarray
    h: np.ndarray
    #: Value of one more battle of each pair for the ranking and for the widest intervals.
    rank: np.ndarray
    interval: np.ndarray
    #: A square root of the covariance (``root @ root.T == S``), for posterior draws.
    root: np.ndarray
    #: Share of information draws that go to the intervals (see the module docstring).
    interval_share: float
    sharpness: float
    #: The fit's covariance, half-win scores per pair and dispersion, to fold in later votes
    #: (:func:`arena_core.matchmaking.track.advance`); None when not given.
    cov: np.ndarray | None = None
    scores: np.ndarray | None = None
    dispersion: float = 1.0


def snapshot(ratings, covariance, battles, params: MatchParams | None = None, *,
             weights=None, scores=None, dispersion: float = 1.0) -> Snapshot:  # fmt: skip
    """Precompute every pair's value from a fit (see the module docstring); ``weights`` are
    the operator's (:class:`Rules`), which the interval goal honours as shares."""
    params = params or _DEFAULTS
    theta = to_theta(np.asarray(ratings, dtype=float))
    cov = np.asarray(covariance, dtype=float)
    var = np.diag(cov)
    s2 = np.maximum(var[:, None] + var[None, :] - 2.0 * cov, TINY_VAR)
    gap = np.abs(theta[:, None] - theta[None, :])
    p = sigmoid(gap)
    h = p * (1.0 - p)
    rank = rank_value(gap, s2, h, 0, params.sharpness)
    np.fill_diagonal(rank, 0.0)
    rho = (expected_spearman if params.exact_rho else shortcut_spearman)(ratings, gap, s2)
    unsettled = (1.0 - rho) / max(1.0 - params.settled_rho, 1e-9)
    interval = interval_value(cov, s2, h, params.target_width, params.interval_focus, weights)
    eigen, vectors = np.linalg.eigh(cov)
    return Snapshot(
        ratings=np.asarray(ratings, dtype=float).copy(), battles=np.asarray(battles).copy(),
        gap=gap, s2=s2, h=h, rank=rank, interval=interval,
        root=vectors * np.sqrt(np.maximum(eigen, 0.0)),
        interval_share=params.interval_share * float(np.clip(2.0 * (1.0 - unsettled), 0.0, 1.0)),
        sharpness=params.sharpness, cov=cov,
        scores=None if scores is None else np.asarray(scores, dtype=float).copy(),
        dispersion=float(dispersion),
    )  # fmt: skip


def draw_pair(snap: Snapshot, battles: np.ndarray, candidates: Sequence[int],
              rng: np.random.Generator, *, recent: Recent | None = None,
              rules: Rules | None = None, params: MatchParams | None = None,
              scores=None) -> tuple[int, int]:  # fmt: skip
    """Two distinct model indices from ``candidates``, in display order (A, B).

    Parameters
    ----------
    snap : Snapshot
        The last fit (:func:`snapshot`); it may lag the votes.
    battles : (n, n) array
        Battles so far between each pair, current to the last vote.
    candidates : sequence of int
        Models that can be paired now (available, not paused, speaking the prompt's language).
    rng : numpy.random.Generator
    recent : Recent, optional
        Battles per model over the recent window (of the prompt's category), for exposure.
    rules : Rules, optional
        Operator weights and pairs that never meet.
    params : MatchParams, optional

    Everything works on whole (n, n) arrays masked to the candidates: at a hundred
    models that is cheaper than cutting out sub-matrices.
    """
    params = params or _DEFAULTS
    if params.track_votes and scores is not None:
        snap = advance(snap, battles, scores, params)
    n = len(snap.ratings)
    rules = rules if rules is not None else Rules.build(n)
    member = np.zeros(n, dtype=bool)
    member[np.asarray(list(candidates), dtype=np.int64)] = True
    member &= rules.pair_weight @ member > 0  # someone it may meet
    if member.sum() < 2:
        raise NoPairError("fewer than two models can be paired")
    weight = rules.weights * member
    pair = _newcomer_pair(battles, member, rules, rng, params)
    if pair is None:
        member = _held_back(member, weight, rules, recent, params)
    to_intervals = rng.random() < snap.interval_share
    if pair is None and not to_intervals and rng.random() < params.posterior_share:
        pair = _posterior_pair(snap, member, rules, rng)
    if pair is None:
        odds = _pair_odds(snap, battles, to_intervals, rules.pair_weight)
        if not member.all():
            odds[~member] = 0.0
            odds[:, ~member] = 0.0
        first = _first_odds(odds, weight, recent, params)
        if not first.any():  # nothing left to learn here: any allowed pair
            odds = rules.pair_weight * np.outer(member, member)
            first = odds.sum(axis=1)
        first = _pick(first, rng)
        pair = first, _pick(odds[first], rng)
    a, b = int(pair[0]), int(pair[1])
    return (a, b) if rng.random() < 0.5 else (b, a)


def _newcomer_pair(battles, member, rules: Rules, rng, params: MatchParams):
    """(newcomer, opponent) for this draw, or None for an information draw."""
    totals = battles.sum(axis=1)
    fresh = member & (totals < params.newcomer_battles)
    if not fresh.any():
        return None
    fresh &= totals < 0.5 * np.median(totals[member])
    if not fresh.any() or rng.random() >= params.newcomer_share:
        return None
    least = np.flatnonzero(fresh & (totals == totals[fresh].min()))
    first = int(least[rng.integers(len(least))])
    # Among the opponents it met least, in proportion to their weight: spread over the board.
    allowed = rules.pair_weight[first] * member
    met = np.where(allowed > 0, battles[first], np.inf)
    return first, _pick(allowed * (met == met.min()), rng)


def _held_back(member, weight, rules: Rules, recent: Recent | None, params: MatchParams):
    """``member`` without the models over ``cap`` times their share of a full recent window,
    when the others can still be paired (a newcomer's draw is not held).

    A bound, on top of the discount in :func:`_first_odds`: the discount alone let a
    model whose pairs are worth a hundred times the others' keep most of the draws. A
    hopeless model far below the rest is one: each of its battles says little (``h`` is
    small), so its interval stays the widest and the interval goal kept choosing it, in
    93% of the battles at 4.7 times its share. Only over a full window: in the first
    votes a share is a handful of battles, and holding models back there spread the
    early votes (18% saved to rho >= 0.95 instead of 24% in the simulation).
    """
    if recent is None or recent.votes < params.window:
        return member
    due = _due(weight)
    kept = member & (recent.battles + 1 <= params.cap * due * recent.votes)
    kept &= rules.pair_weight @ kept > 0  # someone it may meet among the others
    return kept if kept.sum() >= 2 else member


def _posterior_pair(snap: Snapshot, member, rules: Rules, rng):
    """A model far from its place in a posterior sample, and one it changed places with."""
    theta = to_theta(snap.ratings)
    sample = theta + snap.root @ rng.standard_normal(len(theta))
    # Candidates only: the others sink below every candidate, in both orders alike.
    sunk = np.where(member, 0.0, -1e9)
    place = np.argsort(np.argsort(theta + sunk))
    moved = (np.argsort(np.argsort(sample + sunk)) - place) ** 2 * rules.weights * member
    if not moved.any():
        return None
    first = _pick(moved, rng)
    swapped = np.sign(sample[first] - sample) != np.sign(theta[first] - theta)
    odds = swapped * member * rules.pair_weight[first]
    return (first, _pick(odds, rng)) if odds.any() else None


def _pair_odds(snap: Snapshot, battles, to_intervals: bool, pair_weight) -> np.ndarray:
    """Value of each pair for one goal after the battles since the fit, times the rules' weight."""
    value = snap.interval if to_intervals else snap.rank
    odds = value * pair_weight
    i, j = np.nonzero(battles != snap.battles)
    if len(i):
        m, h, s2 = np.maximum(battles[i, j] - snap.battles[i, j], 0), snap.h[i, j], snap.s2[i, j]
        if to_intervals:
            odds[i, j] /= 1.0 + m * h * s2
        else:
            odds[i, j] = rank_value(snap.gap[i, j], s2, h, m, snap.sharpness) * pair_weight[i, j]
    return odds


def _first_odds(odds, weight, recent: Recent | None, params: MatchParams) -> np.ndarray:
    """Odds of each model being drawn first: its share of the pair odds, lifted if starved.

    A model over ``cap`` times its share of the window is held back (its pairs
    scaled down, in place; over a full window it is out of the draw already:
    :func:`_held_back`); one under ``floor`` times it is drawn first with ``lift``
    times the probability of its share, and the others make room.
    """
    if recent is None or recent.votes <= 0:
        return odds.sum(axis=1)
    due = _due(weight)
    seen = recent.battles / recent.votes
    hold = (
        np.where(due > 0, np.minimum(1.0, params.cap * due / np.maximum(seen, TINY_VAR)), 1.0) ** 2
    )
    if (hold < 1.0).any():
        odds *= hold[:, None]
        odds *= hold[None, :]
    first = odds.sum(axis=1)
    total = first.sum()
    if total <= 0:
        return first
    first /= total
    starved = (seen < params.floor * due) & (first > 0)
    if not starved.any():
        return first
    lifted = np.maximum(first[starved], params.lift * due[starved])
    room = 1.0 - lifted.sum()
    if room <= 0:  # only starved models are drawn first, in proportion to what they are due
        return np.where(starved, due, 0.0)
    rest = first[~starved].sum()
    first[~starved] *= room / rest if rest > 0 else 0.0
    first[starved] = lifted
    return first


def _due(weight: np.ndarray) -> np.ndarray:
    """Battles per vote each model is due: ``2 w / sum w``, but at most 1 (a model is in
    every battle at most), the rest of the two sides shared by the others by weight.

    ``2 w / sum w`` promised a model of weight 100 beside three of weight 1 1.94 battles a
    vote and each other 0.019, where 1 and 1/3 are what those weights can give: the floor of
    the others was 0.012 battles a vote, so one of three equal models could fall to a fifth
    of its peers' share and stay there. Only the heaviest model can be over 1 (two would
    weigh more than all), and then every other one is under it.
    """
    total = weight.sum()
    due = 2.0 * weight / total
    top = int(np.argmax(due))
    if due[top] > 1.0:
        due = weight / (total - weight[top])
        due[top] = 1.0
    return due


def _pick(odds: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn with probability proportional to ``odds`` (not all zero)."""
    cumulative = np.cumsum(odds)
    return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
