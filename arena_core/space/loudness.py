"""Integrated loudness, ITU-R BS.1770-4: what blinding levels clips to and what a vote records.

One implementation for both, so the loudness a vote's style fields report
(:mod:`arena_core.analysis.speech_style`) is the loudness delivery aimed at
(:mod:`arena_core.space.blinding`). The K-weighting filters are pyloudnorm's; the
gating is computed with array operations over a running sum of energy instead of
pyloudnorm's per-block loop, which made a battle take 0.1-0.5 s.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pyloudnorm
from scipy.signal import lfilter

#: BS.1770's gating block (seconds); shorter clips are measured with silence appended,
#: which the absolute gate ignores.
LOUDNESS_BLOCK_SECONDS = 0.4
#: Overlap of BS.1770's gating blocks.
BLOCK_OVERLAP = 0.75
#: BS.1770's absolute gate (LUFS) and relative gate (LU below the absolutely gated loudness).
ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = 10.0
#: BS.1770's constant between mean square and loudness (dB).
LUFS_OFFSET = -0.691


def loudness(x: np.ndarray, rate: int) -> float:
    """Integrated loudness (LUFS, ITU-R BS.1770-4) of mono floats; ``-inf`` for silence.

    The K-weighting filters are pyloudnorm's; the gating is pyloudnorm's
    ``Meter.integrated_loudness`` (400 ms blocks, 75% overlap, absolute gate at
    -70 LUFS, relative gate 10 LU below) computed with array operations instead
    of its per-block loop, which made a battle take 0.1-0.5 s. Audio shorter
    than one block is measured with silence appended (the absolute gate ignores it).
    """
    x = np.asarray(x, dtype=np.float64)
    shortest = loudness_length(len(x), rate)
    if len(x) < shortest:
        x = np.concatenate([x, np.zeros(shortest - len(x))])
    for b, a, gain in k_weighting(rate):
        x = gain * lfilter(b, a, x)
    return gated_loudness(np.concatenate([[0.0], np.cumsum(np.square(x))]), rate)


def loudness_length(length: int, rate: int) -> int:
    """Samples :func:`loudness` measures for a clip of ``length``: at least one block and one."""
    return max(length, math.ceil(LOUDNESS_BLOCK_SECONDS * rate) + 1)


def gated_loudness(energy: np.ndarray, rate: int) -> float:
    """BS.1770's gated integrated loudness (LUFS) from ``energy``, the running sum of the
    squared K-weighted samples with a leading 0 (``energy[i]`` sums samples ``0..i-1``),
    over at least :func:`loudness_length` samples. ``-inf`` when every block is gated."""
    length = len(energy) - 1
    step = 1.0 - BLOCK_OVERLAP
    duration = length / rate
    blocks = np.arange(
        int(np.round((duration - LOUDNESS_BLOCK_SECONDS) / (LOUDNESS_BLOCK_SECONDS * step))) + 1
    )
    lower = (LOUDNESS_BLOCK_SECONDS * (blocks * step) * rate).astype(int)
    # The last block may run past the end: like pyloudnorm, it sums what is there.
    upper = np.minimum((LOUDNESS_BLOCK_SECONDS * (blocks * step + 1) * rate).astype(int), length)
    lower = np.minimum(lower, length)
    power = (energy[upper] - energy[lower]) / (LOUDNESS_BLOCK_SECONDS * rate)
    with np.errstate(divide="ignore"):
        block_lufs = LUFS_OFFSET + 10 * np.log10(power)
    gated = power[block_lufs >= ABSOLUTE_GATE_LUFS]
    if len(gated) == 0:
        return -math.inf
    relative = LUFS_OFFSET + 10 * np.log10(np.mean(gated)) - RELATIVE_GATE_LU
    kept = power[(block_lufs > relative) & (block_lufs > ABSOLUTE_GATE_LUFS)]
    return float(LUFS_OFFSET + 10 * np.log10(np.mean(kept))) if len(kept) else -math.inf


@functools.lru_cache(maxsize=16)
def k_weighting(rate: int) -> tuple[tuple[np.ndarray, np.ndarray, float], ...]:
    """BS.1770's two K-weighting stages at ``rate``, as pyloudnorm designs them."""
    stages = (pyloudnorm.IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, rate, "high_shelf"),
              pyloudnorm.IIRfilter(0.0, 0.5, 38.0, rate, "high_pass"))  # fmt: skip
    return tuple((stage.b, stage.a, stage.passband_gain) for stage in stages)
