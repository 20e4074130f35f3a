"""The rating scale shared by every estimator.

Ratings are Elo-style points: a model with no prior sits at :data:`ANCHOR`, and
a gap of :data:`SCALE` points means odds of 10 to 1. Estimators work in natural
log-odds internally (``theta``) and convert only at their edges.
"""

import math

#: Rating of a model with no prior, and the centre of a fit with no prior.
ANCHOR = 1000.0
#: Rating points per factor of 10 in the odds of winning.
SCALE = 400.0
#: Natural log-odds per rating point: P(a beats b) = 1 / (1 + exp(-(Ra - Rb) * NATURAL)).
NATURAL = math.log(10.0) / SCALE


def to_theta(ratings):
    """Ratings (points) to natural log-odds strengths centred on the anchor."""
    return (ratings - ANCHOR) * NATURAL


def to_rating(theta):
    """Natural log-odds strengths back to rating points."""
    return ANCHOR + theta / NATURAL


def expected_score(rating_a: float, rating_b: float) -> float:
    """Probability that a beats b (a draw counting half) under the scale."""
    return 1.0 / (1.0 + math.exp((rating_b - rating_a) * NATURAL))
