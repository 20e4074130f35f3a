"""The style of a speech clip as a listener hears it: how long, how fast, how loud.

These are the covariates of a style-controlled board (LMArena's "style control"
adds such terms to its Bradley-Terry fit) and the measure of a judge's duration
preference. They must not be one number in disguise. Within a battle both sides
read the same prompt, so words per second of the whole clip would be the word
count over the duration: exactly collinear with duration across the battle. So:

* ``duration_s`` is the span a listener waits through: from the first to the
  last active frame, the padding and silence at either end excluded;
* ``speech_rate`` is prompt units per second of *active* time: the span less its
  pauses (silences of :data:`MIN_PAUSE_SECONDS` or more), i.e. the articulation
  rate. A reading with long pauses is long but not slow; one without is short
  because it is fast;
* ``lufs`` is the integrated loudness, ITU-R BS.1770-4.

A frame (:data:`FRAME_SECONDS`) is active when its energy is within
:data:`SILENCE_DB` of the clip's loudest frame, the depth at which blind
delivery (:mod:`arena_core.space.blinding`) trims silence. Durations are exact
to one frame.

Cheap on purpose (it runs on every delivered clip): a 4 s clip at 24 kHz takes
well under a millisecond (``bench/judges_speed.py``), most of it the loudness
meter's two filters, run as one compiled loop (numba) when numba is installed,
through scipy otherwise; the two agree to rounding.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from arena_core.backends.audio import INT16_FULL_SCALE
from arena_core.backends.output import Output, OutputError
from arena_core.space.loudness import gated_loudness, k_weighting, loudness_length

#: Length of the frames activity is decided on (seconds).
FRAME_SECONDS = 0.010
#: A frame whose energy is this far or further below the loudest frame's (dB) is silent:
#: the depth :class:`arena_core.space.blinding.BlindingParams` trims at by default.
SILENCE_DB = -45.0
#: Shortest silence inside the speech that counts as a pause (seconds); shorter gaps (stop
#: closures, the hush before a plosive) are articulation. 250 ms is the threshold De Jong
#: and Bosker (2013, "Choosing a threshold for silent pauses to measure second language
#: fluency") found best.
MIN_PAUSE_SECONDS = 0.25
#: Slack (seconds) when comparing a whole number of frames with the pause threshold.
_EPSILON = 1e-9
#: Characters that count one prompt unit each: CJK ideographs (with the iteration mark 々
#: and 〇), hiragana, katakana (with the prolonged-sound mark), half-width katakana.
_CJK = (r"\u3005-\u3007\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
        r"\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9d\U00020000-\U0003134f")  # fmt: skip
#: One unit: a CJK character, or a word of a script that separates words: letters and
#: digits, joined by inner apostrophes or hyphens, or by points and commas between digits.
_WORD_CHAR = rf"(?:(?![{_CJK}])[^\W_])"
_UNIT = re.compile(rf"[{_CJK}]|{_WORD_CHAR}+(?:(?:['’-]|(?<=\d)[.,](?=\d)){_WORD_CHAR}+)*")


@dataclass(frozen=True)
class SpeechStyle:
    """What a listener hears of a clip's style (see the module docstring)."""

    duration_s: float
    speech_rate: float | None
    lufs: float


def prompt_units(text: str) -> int:
    """Units of speech in a prompt: words in scripts that separate them with spaces (a
    word keeps its apostrophes and hyphens: "don't", "well-known"), and each CJK
    ideograph or kana one unit (Japanese and Chinese have no spaces). A number written
    in figures ("4.99", "1,000") is one unit however long it is read; punctuation is none. Scripts
    without spaces that are not CJK (Thai, Lao, Khmer) count a whole run as one word."""
    return len(_UNIT.findall(text))


def speech_style(output: Output, prompt: str) -> SpeechStyle:
    """The :class:`SpeechStyle` of an audio output that reads ``prompt``.

    A clip with no active frame (silence) has duration 0, no rate and ``-inf`` LUFS.
    """
    if output.modality != "audio" or output.samples is None:
        raise OutputError(f"a {output.modality} output has no speech style")
    samples, rate = output.samples, output.sample_rate
    span, active = active_seconds(samples, rate)
    units = prompt_units(prompt)
    speech_rate = units / active if units and active > 0 else None
    return SpeechStyle(duration_s=span, speech_rate=speech_rate, lufs=clip_loudness(samples, rate))


def active_seconds(samples: np.ndarray, rate: int) -> tuple[float, float]:
    """(span, active time) in seconds: from the first to the last active frame, and that
    span less the pauses in it (runs of silent frames of :data:`MIN_PAUSE_SECONDS` or more).
    A last partial frame is not looked at."""
    size = max(1, round(FRAME_SECONDS * rate))
    frames = len(samples) // size
    if frames == 0:
        return 0.0, 0.0
    block = samples[: frames * size].reshape(frames, size).astype(np.float32)
    energy = np.einsum("ij,ij->i", block, block)
    loudest = float(energy.max())
    if loudest <= 0:
        return 0.0, 0.0
    active = np.flatnonzero(energy >= loudest * 10 ** (SILENCE_DB / 10))
    frame_seconds = size / rate
    gaps = np.diff(active) - 1  # silent frames between consecutive active ones
    pause_frames = int(gaps[gaps * frame_seconds >= MIN_PAUSE_SECONDS - _EPSILON].sum())
    span_frames = int(active[-1] - active[0] + 1)
    return span_frames * frame_seconds, (span_frames - pause_frames) * frame_seconds


def clip_loudness(samples: np.ndarray, rate: int) -> float:
    """Integrated loudness (LUFS, ITU-R BS.1770-4) of int16 samples, as
    :func:`arena_core.space.loudness.loudness` measures it (same filters, same gating)."""
    length = loudness_length(len(samples), rate)
    compiled = _compiled_energy()
    stages = k_weighting(rate)
    if compiled is not None:
        b = np.array([stage_b * gain for stage_b, _, gain in stages])
        a = np.array([stage_a for _, stage_a, _ in stages])
        energy = compiled(np.ascontiguousarray(samples), 1.0 / INT16_FULL_SCALE, b, a, length)
    else:
        energy = _energy_scipy(samples, stages, length)
    return gated_loudness(energy, rate)


def _energy_scipy(samples: np.ndarray, stages, length: int) -> np.ndarray:
    """The running K-weighted energy through scipy's filters (where numba is missing)."""
    x = np.zeros(length)
    x[: len(samples)] = samples / INT16_FULL_SCALE
    for b, a, gain in stages:
        x = gain * lfilter(b, a, x)
    return np.concatenate([[0.0], np.cumsum(np.square(x))])


def _energy_loop(samples, scale, b, a, length):  # pragma: no cover - numba compiles it
    """Both K-weighting biquads (transposed direct form II, as lfilter runs them) and the
    running sum of the squared output in one pass; samples past the clip are zeros."""
    out = np.empty(length + 1)
    out[0] = 0.0
    s10 = s11 = s20 = s21 = 0.0
    total = 0.0
    n = samples.shape[0]
    for i in range(length):
        v = samples[i] * scale if i < n else 0.0
        y1 = b[0, 0] * v + s10
        s10 = b[0, 1] * v - a[0, 1] * y1 + s11
        s11 = b[0, 2] * v - a[0, 2] * y1
        y2 = b[1, 0] * y1 + s20
        s20 = b[1, 1] * y1 - a[1, 1] * y2 + s21
        s21 = b[1, 2] * y1 - a[1, 2] * y2
        total += y2 * y2
        out[i + 1] = total
    return out


@functools.cache
def _compiled_energy():
    """:func:`_energy_loop` compiled by numba (cached on disk after the first compile), or
    None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=True)(_energy_loop)
