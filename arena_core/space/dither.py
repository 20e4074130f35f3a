"""Triangular (TPDF) dither and 16-bit quantisation, as blind delivery uses them.

Every delivered clip is dithered afresh (``blinding.deliver``), so the same model and
prompt never give the same bytes; this runs on the path of every battle, twice, over
seconds of audio, hence the care for speed below.
"""

from __future__ import annotations

import numpy as np

from arena_core.backends.audio import INT16_FULL_SCALE


def tpdf_dither(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` samples of triangular dither in LSB (float32, in (-0.5, 0.5) LSB steps of 1/256).

    The difference of two uniform draws, each taken from random bytes, far below anything
    audible. Every battle dithers two clips of seconds of audio, on the path of every
    battle: drawing floats (float64 first, then float32) was the largest cost of serving a
    cached battle; random bytes cost a quarter as much, and bytes cut from 64-bit integers a
    sixth of that again (``Generator.bytes`` makes them 32 bits at a time). Arithmetic in
    place, in float32, in as few passes as possible: a quarter of the time of mixed-type
    expressions on a fresh array each.
    """
    steps = random_bytes(rng, 2 * n).view(np.int8)
    dither = steps[:n].astype(np.float32)
    dither -= steps[n:]
    dither *= np.float32(1 / 256)
    return dither


def to_int16(scaled: np.ndarray) -> np.ndarray:
    """Float32 samples in LSB to int16: rounded and clipped to full scale (``scaled`` is reused)."""
    np.rint(scaled, out=scaled)
    np.clip(scaled, -INT16_FULL_SCALE - 1, INT16_FULL_SCALE, out=scaled)
    return scaled.astype(np.int16)


def random_bytes(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` uniform random bytes (uint8) from ``rng``, cut from full-range 64-bit integers."""
    words = rng.integers(0, 2**64, size=(n + 7) // 8, dtype=np.uint64, endpoint=False)
    return words.view(np.uint8)[:n]
