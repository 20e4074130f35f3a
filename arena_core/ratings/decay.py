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


def decay_weights(ts_us: np.ndarray, half_life_days: float, reference_us: int) -> np.ndarray:
    """Weight of each vote: ``2 ** (-(reference - ts) / half_life)``, at most 1."""
    if not half_life_days > 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
    age_days = (reference_us - np.asarray(ts_us, dtype=np.int64)) / DAY_US
    return np.exp2(-np.maximum(age_days, 0.0) / half_life_days)
