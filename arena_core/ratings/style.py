"""Style control for speech, and the A-side term of a board: covariates that are not the model.

LMArena's style control adds, to each vote, the difference in style between
its two answers (length, markdown) as covariates of the Bradley-Terry fit, so
that a model's rating says how much voters like it at equal style. Here the
style of a speech clip is four measured features of each side:

==============  ========================  =================================================
feature         covariate                 why
==============  ========================  =================================================
duration_s      (a - b) / (a + b)         a positive length: a 10% longer clip is the same
                                          difference at 2 s or at 20 s; bounded in (-1, 1),
                                          so one very long clip cannot dominate (LMArena's
                                          normalised length difference)
speech_rate     (a - b) / (a + b)         words per second: positive, a ratio scale as well
sample_rate     (a - b) / (a + b)         Hz, positive; what matters is the ratio of
                                          bandwidths (16 vs 24 kHz as 24 vs 36)
lufs            a - b (LU)                loudness is already logarithmic (decibels) and
                                          may be negative, so a ratio means nothing; a
                                          difference of 1 LU is the same at any level
==============  ========================  =================================================

Each covariate is then divided by its root mean square over the votes in the
fit, so that coefficients are comparable: **rating points per standard
deviation** of the covariate (the rating gap that would move the odds as much
as side A being one standard deviation longer, faster, louder...). The
covariates are not centred: swapping the sides of a vote negates its
differences, whose mean is zero when sides are drawn at random, and centring
would leak the A-side term into them. The standard deviation in the
covariate's own units is reported beside each coefficient to convert back.

A vote with a feature missing (null) on either side, or a non-positive value
where a ratio is taken, is left out of the style fit and counted; a feature
with no value at all, or the same on every clip, is not fitted and named.

The **A-side term** (:func:`position_term`) is the constant covariate alone:
how much being shown first is worth, in rating points, and as the probability
that side A wins between two equal models. Peer arenas do not report it.

A coefficient the votes do not bound (every vote it informs going its way, e.g.
all decisive votes for side A) has no finite estimate: it is reported as
unbounded with the one-sided bound its votes support, and one no vote informs as
not estimated (:func:`supported_coefficients`,
:mod:`~arena_core.ratings.separation`), as the leaderboard reports an infinite
rating; the near-flat prior's mode, a finite number with an interval of
+-10^5 points, is never printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from arena_core.ratings.bt import sigmoid
from arena_core.ratings.covariates import (
    CovariateFit,
    CovariateParams,
    VoteRows,
    covariate_bradley_terry,
)
from arena_core.ratings.scale import NATURAL, to_theta
from arena_core.ratings.separation import (
    ABOVE,
    BELOW,
    BOUNDED,
    EITHER,
    axis_separated,
    coefficient_support,
    one_sided_bound,
)

#: Normalised difference (a - b) / (a + b) of a positive quantity.
RATIO = "ratio"
#: Plain difference a - b of a quantity already on a log scale.
DIFFERENCE = "difference"
#: Speech style features and how each becomes a covariate (see the module docstring).
STYLE_FEATURES: dict[str, str] = {
    "duration_s": RATIO,
    "speech_rate": RATIO,
    "lufs": DIFFERENCE,
    "sample_rate": RATIO,
}
#: Name of the constant covariate (side A's edge).
A_SIDE = "a_side"
#: Relative spread below which a covariate counts as constant (floating noise only).
_CONSTANT = 1e-12


@dataclass(frozen=True)
class SideVotes:
    """Votes with measured features of each side.

    ``features`` maps a feature name to its values for side A and side B (floats,
    NaN where unknown). ``weight`` is one per vote (None: each counts 1).
    """

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    features: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    weight: np.ndarray | None = None

    @classmethod
    def from_columns(cls, a, b, outcome, columns: Mapping[str, object],
                     weight=None) -> SideVotes:  # fmt: skip
        """From vote-record columns named ``model_a_<feature>`` and ``model_b_<feature>``
        (None or missing: unknown), for the features of :data:`STYLE_FEATURES`."""
        n = len(a)
        features = {}
        for name in STYLE_FEATURES:
            sides = [columns.get(f"model_{side}_{name}") for side in ("a", "b")]
            features[name] = tuple(
                np.full(n, np.nan) if s is None else np.array(s, dtype=float) for s in sides
            )
        return cls(np.asarray(a), np.asarray(b), np.asarray(outcome), features, weight)


@dataclass(frozen=True)
class Coefficient:
    """A fitted covariate: its effect in rating points with an interval.

    ``points`` is per unit of the covariate as fitted (per standard deviation
    for style covariates, per vote for the A-side term). ``unit_sd`` is that
    standard deviation in the covariate's own units (1 for the A-side term).
    ``win_probability`` is P(side A wins) between equal models when the
    covariate is one unit in A's favour, with its interval. ``informative`` is
    the votes whose covariate is not zero (None: not counted).

    A coefficient the votes do not bound (:mod:`~arena_core.ratings.separation`:
    every informative vote goes its way) has no estimate, as the leaderboard gives
    an infinite rating none: ``points`` and ``win_probability`` are None and only
    the one-sided bound the votes support is set (``low`` when unbounded above,
    ``high`` below; neither when it moves jointly with other covariates). One no
    vote informs has nothing but ``informative`` = 0. ``note`` says which.
    """

    name: str
    points: float | None
    low: float | None
    high: float | None
    unit_sd: float
    win_probability: float | None
    wp_low: float | None
    wp_high: float | None
    informative: float | None = None
    note: str | None = None

    @classmethod
    def from_fit(cls, name: str, points: float, sd: float, level: float = 0.95,
                 unit_sd: float = 1.0, informative: float | None = None) -> Coefficient:  # fmt: skip
        """From a fitted coefficient (points) and its standard deviation: normal interval."""
        z = NormalDist().inv_cdf(0.5 + level / 2.0)
        low, high = points - z * sd, points + z * sd
        wp = sigmoid(np.array([points, low, high]) * NATURAL)
        return cls(name, float(points), float(low), float(high), float(unit_sd), float(wp[0]),
                   float(wp[1]), float(wp[2]), informative)  # fmt: skip

    @classmethod
    def unbounded(cls, name: str, direction: int, bound: float | None, unit_sd: float,
                  informative: float) -> Coefficient:  # fmt: skip
        """No finite estimate: ``bound`` (points, or None) is the one-sided bound."""
        wp = None if bound is None else float(sigmoid(np.array([bound * NATURAL]))[0])
        above, below = direction == ABOVE, direction == BELOW
        if above or below:
            note = (f"unbounded {'above' if above else 'below'}: all {informative:g} informative "
                    "votes go its way, no finite estimate")  # fmt: skip
        else:  # the votes need not go its way at all: it is not identified apart from others
            note = (f"not identified: together with other covariates it separates the votes, so "
                    f"it can grow without end either way ({informative:g} informative votes), "
                    "no finite estimate")  # fmt: skip
        return cls(name, None, bound if above else None, bound if below else None,
                   float(unit_sd), None, wp if above else None, wp if below else None,
                   float(informative), note)  # fmt: skip

    @classmethod
    def uninformed(cls, name: str, unit_sd: float = 1.0) -> Coefficient:
        """No vote informs it (no votes, or the covariate is zero on every one)."""
        return cls(name, None, None, None, float(unit_sd), None, None, None, 0.0,
                   "no informative vote: not estimated")  # fmt: skip

    @property
    def estimated(self) -> bool:
        """Whether it has a finite estimate and a two-sided interval."""
        return self.points is not None


def supported_coefficients(names: tuple[str, ...], coef: np.ndarray, coef_sd: np.ndarray,
                           unit_sd: np.ndarray, rows: VoteRows, eta: np.ndarray,
                           level: float = 0.95) -> tuple[Coefficient, ...]:  # fmt: skip
    """Each fitted coefficient (points, with its standard deviation) as its votes support it.

    A coefficient the votes bound keeps its normal interval, unchanged; one they do not
    (:func:`~arena_core.ratings.separation.coefficient_support`) is reported without an
    estimate, with the one-sided bound of :func:`~arena_core.ratings.separation.one_sided_bound`
    when it alone separates the votes; one no vote informs, as uninformed. ``eta`` is each
    row's linear predictor at the fitted mode (natural units), for that bound.
    """
    informative, direction = coefficient_support(rows.x, rows.score, rows.weight)
    out = []
    for i, name in enumerate(names):
        column = rows.x[:, i]
        if informative[i] == 0:
            out.append(Coefficient.uninformed(name, unit_sd[i]))
        elif direction[i] == BOUNDED:
            out.append(Coefficient.from_fit(name, coef[i], coef_sd[i], level, unit_sd[i],
                                            float(informative[i])))  # fmt: skip
        else:
            bound = None
            if direction[i] != EITHER and axis_separated(column, rows.score, rows.weight,
                                                         direction[i]):  # fmt: skip
                offset = eta - column * coef[i] * NATURAL
                bound = one_sided_bound(offset, column, rows.score, rows.weight, direction[i],
                                        level) / NATURAL  # fmt: skip
            out.append(Coefficient.unbounded(name, direction[i], bound, unit_sd[i],
                                             float(informative[i])))  # fmt: skip
    return tuple(out)


def _eta(fit: CovariateFit, rows: VoteRows) -> np.ndarray:
    """Each row's linear predictor at the fit's mode (natural units)."""
    theta = to_theta(fit.rating)
    return theta[rows.a] - theta[rows.b] + rows.x @ (fit.coef * NATURAL)


@dataclass(frozen=True)
class StyleFit:
    """A style-controlled board: ratings (points, pinned as the posterior board) with
    intervals, each fitted covariate, and the votes left out."""

    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    coefficients: tuple[Coefficient, ...]
    votes_used: int
    #: Votes left out because a fitted feature was missing or invalid on either side.
    left_out: int
    #: Per feature, votes where it was missing or invalid (before dropping features).
    missing: dict[str, int]
    #: Features not fitted, with the reason ("no values", "no variation").
    not_fitted: dict[str, str]
    #: Per model, whether a vote of the fit names it (a model without is not rated by it:
    #: its rating is its prior).
    played: np.ndarray


def style_covariates(votes: SideVotes) -> tuple[np.ndarray, tuple[str, ...], np.ndarray,
                                                np.ndarray, dict[str, int], dict[str, str]]:  # fmt: skip
    """The style covariates of each vote, standardised.

    Returns ``(x, names, keep, unit_sd, missing, not_fitted)``: ``x`` has one
    row per kept vote (``keep`` is the mask over all votes) and one column per
    fitted feature, divided by its root mean square ``unit_sd``.
    """
    n = len(votes.a)
    columns, valid, names, missing, not_fitted = [], [], [], {}, {}
    for name, kind in STYLE_FEATURES.items():
        if name not in votes.features:
            not_fitted[name] = "no values"
            continue
        va, vb = (np.asarray(v, dtype=float) for v in votes.features[name])
        ok = np.isfinite(va) & np.isfinite(vb)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if kind == RATIO:
                ok &= (va > 0) & (vb > 0)
                diff = (va - vb) / (va + vb)
            else:
                diff = va - vb
        # Two finite values can differ by more than a float holds (loudness of +-1.7e308):
        # that vote is left out and counted, instead of an infinite column that rescaling
        # turned into "no variation" for every vote.
        ok &= np.isfinite(diff)
        missing[name] = int(n - ok.sum())
        if not ok.any():
            not_fitted[name] = "no values"
            continue
        # A feature that is the same wherever it is known is not fitted, so where it is
        # unknown must not cost a vote: an arena whose engines all ran at 24 kHz, one of
        # them with its rate unknown, lost every vote of that model (and left it unrated)
        # for a covariate the fit then dropped as "no variation".
        if not _varies(diff[ok]):
            not_fitted[name] = "no variation"
            continue
        columns.append(np.where(ok, diff, 0.0))
        valid.append(ok)
        names.append(name)
    # Checked again on the votes kept, until every feature left varies there: a feature may
    # vary only where another is unknown, and once it is dropped the votes only it left
    # out come back (they were lost to a covariate the fit did not use).
    while True:
        keep = np.logical_and.reduce(valid) if valid else np.ones(n, dtype=bool)
        x = np.column_stack(columns)[keep] if columns else np.zeros((int(keep.sum()), 0))
        varies = [_varies(column) for column in x.T]
        if all(varies):
            break
        for name, v in zip(names, varies, strict=True):
            if not v:
                not_fitted[name] = "no variation"
        columns, valid, names = ([item for item, v in zip(group, varies, strict=True) if v]
                                 for group in (columns, valid, names))  # fmt: skip
    rms = np.sqrt((x * x).mean(axis=0)) if len(x) else np.zeros(x.shape[1])
    return x / np.where(rms > 0, rms, 1.0), tuple(names), keep, rms, missing, not_fitted


def _varies(diff: np.ndarray) -> bool:
    """Whether a covariate's differences vary beyond floating noise (root mean square above
    :data:`_CONSTANT` of the largest magnitude, or of 1)."""
    if not len(diff):
        return False
    rms = float(np.sqrt((diff * diff).mean()))
    return rms > _CONSTANT * max(float(np.abs(diff).max()), 1.0)


def style_bradley_terry(n_items: int, votes: SideVotes, prior=None,
                        params: CovariateParams | None = None, *, a_side: bool = True,
                        level: float = 0.95) -> StyleFit:  # fmt: skip
    """The style-controlled board: Bradley-Terry with the style covariates (and, with
    ``a_side``, the constant A-side term) on the votes that have them."""
    x, names, keep, unit_sd, missing, not_fitted = style_covariates(votes)
    if a_side:
        x = np.column_stack([np.ones(len(x)), x])
        names, unit_sd = (A_SIDE, *names), np.r_[1.0, unit_sd]
    weight = None if votes.weight is None else np.asarray(votes.weight, float)[keep]
    rows = VoteRows.from_outcomes(np.asarray(votes.a)[keep], np.asarray(votes.b)[keep],
                                  np.asarray(votes.outcome)[keep], x, weight, names)  # fmt: skip
    fit = covariate_bradley_terry(n_items, rows, prior, params)
    low, high = fit.interval(level)
    coefs = supported_coefficients(names, fit.coef, fit.coef_sd, unit_sd, rows, _eta(fit, rows),
                                   level)  # fmt: skip
    played = np.zeros(n_items, dtype=bool)
    played[rows.a[rows.weight > 0]] = played[rows.b[rows.weight > 0]] = True
    return StyleFit(fit.rating, low, high, coefs, int(keep.sum()), int((~keep).sum()), missing,
                    not_fitted, played)  # fmt: skip


def position_term(n_items: int, votes: SideVotes, prior=None,
                  params: CovariateParams | None = None, *,
                  level: float = 0.95) -> Coefficient:  # fmt: skip
    """Side A's edge in a board's votes: rating points and P(A wins) between equal models.

    The Bradley-Terry fit with one constant covariate; the models' ratings are
    fitted alongside, so the term is what remains of side A's wins once who
    played whom is accounted for. Features of ``votes`` are ignored.
    """
    n = len(votes.a)
    rows = VoteRows.from_outcomes(votes.a, votes.b, votes.outcome, np.ones((n, 1)),
                                  votes.weight, (A_SIDE,))  # fmt: skip
    rows = rows.aggregated()
    fit = covariate_bradley_terry(n_items, rows, prior, params)
    return supported_coefficients((A_SIDE,), fit.coef, fit.coef_sd, np.ones(1), rows,
                                  _eta(fit, rows), level)[0]  # fmt: skip
