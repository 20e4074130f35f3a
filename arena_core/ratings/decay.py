"""Time decay: older votes count for less, so a board can follow models that change.

A vote ``age`` days older than the reference time weighs ``2 ** (-age / half_life)``:
after one half-life it counts as half a vote. The weights enter the Bradley-Terry
fit and its intervals as fractional votes (a power-weighted likelihood), so a board
with decay has less evidence, and wider intervals, than one counting every vote in
full. The reference time is the end of the board's window, else its last vote, so
the weights depend only on the log, never on when the board is computed.
"""

from __future__ import annotations

import numpy as np

#: Microseconds per day.
DAY_US = 86_400_000_000
#: The least a vote weighs, however old: the smallest normal double (2^-1022). At about
#: 1075 half-lives a weight underflowed to exactly 0, and a model whose votes were all that
#: old left its comparison group: the board listed it first, in a "group 0", and warned
#: that it never met the models its tallies showed it had played. A vote this light adds
#: no evidence (its model is rated by its prior) but keeps the graph the votes drew.
LEAST_WEIGHT = float(np.finfo(float).tiny)


def check_half_life(half_life_days: float) -> None:
    """Refuse a half-life that is not a positive, finite number of days. An infinite one
    was taken: it weighs every vote 1 (no decay, yet the board claimed one) and its ``inf``
    cannot be written in the board's JSON, which stopped the command half-way through
    printing it."""
    if not 0 < half_life_days < np.inf:
        raise ValueError(f"half_life_days must be a positive, finite number of days, "
                         f"got {half_life_days}")  # fmt: skip


def decay_weights(ts_us: np.ndarray, half_life_days: float, reference_us: int) -> np.ndarray:
    """Weight of each vote: ``2 ** (-(reference - ts) / half_life)``, at most 1 and at
    least :data:`LEAST_WEIGHT`."""
    check_half_life(half_life_days)
    age_days = (reference_us - np.asarray(ts_us, dtype=np.int64)) / DAY_US
    with np.errstate(over="ignore"):  # a half-life of 1e-320 days: ages of inf half-lives
        halvings = np.maximum(age_days, 0.0) / half_life_days
    return np.maximum(np.exp2(-halvings), LEAST_WEIGHT)
