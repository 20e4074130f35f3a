"""Blind delivery of a battle's audio: nothing in the files tells the models apart but the voices.

Before the vote a browser sees, for each clip: its URL (Gradio names a served file by a
hash of its bytes), its bytes, the WAV header (rate, channels, sample width), its length,
its level (peak, RMS, loudness), the silence around the speech, and how long the request
took. As the engines make them, each of these names engines: SVOX Pico is 16 kHz and
about 16 LU louder than eSpeak's Klatt variant, flite leaves ~0.2 s of silence before
speaking, and a cached clip always has the same bytes, so the same URL. Here the clips
of a battle are given one form:

1. **one rate**: resampled (soxr, high quality) to the arena's delivery rate;
2. **same margins**: trimmed to the speech (10 ms frames more than ``silence_db``
   below the loudest frame are cut at both ends, with a 5 ms fade), then placed after
   a leading margin of ``margin`` plus a random share of ``margin_jitter``;
3. **same loudness**: gain set so the ITU-R BS.1770-4 integrated loudness is the
   target, then a random offset within ``loudness_jitter`` per delivery;
4. **peaks limited**: a smooth limiter brings peaks down to :data:`HEADROOM_DB` above
   the target, by at most :data:`MAX_LIMIT_DB` (the loudness is then reached with the
   limiter in place). Most engines' crest factors (measured 10-28 dB on the set
   prompts, ``bench/blinding.py``) fall in the range this moves onto one ceiling;
   the ends of the range keep their own peak, as the sound itself differs there: SVOX
   Pico (clipped by its engine, crest ~11 dB) stays under the ceiling, eSpeak's
   buzzy Klatt voice (crest 21-28 dB) above it. Closing that gap would take 10 dB more
   limiting, which changes how a voice sounds;
5. **same length**: both clips padded with silence to one length, the longer speech
   plus a trailing margin with its own random share;
6. **bytes of their own**: quantised to 16 bits with triangular (TPDF) dither drawn
   per delivery over the whole clip, silence included: the same model and prompt
   twice never give the same bytes, so never the same URL.

Steps 1-4 (:func:`shape`) are a deterministic function of the engine's output, so
:class:`Blinder` caches them (the warm-up fills that cache for the set prompts);
5-6 (:func:`deliver`) cost about a millisecond and are random per battle, from an
injected ``numpy.random.Generator``.

What this does not hide is the speech itself: the voice, its bandwidth (an 8 kHz
engine stays muffled), its speaking rate and so its duration and energy. A listener
hears those. A client that kept revealed clips can also recognise a cached clip it
has seen before from its waveform, as a listener with a perfect memory could; only
outputs that differ each time (stochastic engines, or a prompt set much larger than
what one client sees) prevent that.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import soxr
from scipy.ndimage import minimum_filter1d, uniform_filter1d

from arena_core.backends.audio import INT16_FULL_SCALE
from arena_core.backends.cache import OutputCache
from arena_core.backends.output import Output
from arena_core.space.dither import to_int16, tpdf_dither
from arena_core.space.loudness import loudness

#: Ceiling of the peaks above the loudness target (dB): inside the crest factors of most
#: engines (bench/blinding.py), so their limited peaks all land on it.
HEADROOM_DB = 12.0
#: Deepest peak reduction of the limiter (dB); past it a voice audibly changes.
MAX_LIMIT_DB = 10.0
#: No delivered sample goes above this (dBFS), whatever the crest factor.
SAFETY_CEILING_DB = -1.0
#: Length of the frames the speech is found in (seconds).
FRAME_SECONDS = 0.010
#: Fade applied where silence is cut (seconds), so a cut never clicks.
FADE_SECONDS = 0.005
#: Half-width of the limiter's gain smoothing (seconds), i.e. its attack and release:
#: about one pitch period of a low voice, so the gain does not buzz within a period.
LIMITER_SECONDS = 0.010
#: Loudness error (LU) at which the gain search stops.
LOUDNESS_TOLERANCE = 0.02
#: Most gain-search rounds (each is one limiter pass and one loudness measurement).
MAX_LEVEL_ROUNDS = 8
#: Largest gain change (dB) of one search step.
MAX_GAIN_STEP_DB = 12.0
#: The soxr quality recipe ("HQ": 20-bit precision, ~95% passband).
RESAMPLE_QUALITY = "HQ"


class BlindingError(ValueError):
    """Outputs that cannot be delivered blind (a battle mixing audio and other outputs)."""


@dataclass(frozen=True)
class BlindingParams:
    """How a battle's clips are delivered (see the module docstring).

    ``sample_rate`` (Hz) is the one rate of every clip; ``loudness`` the BS.1770
    target (LUFS) and ``loudness_jitter`` the largest random offset from it (LU);
    ``margin`` the silence before and after the speech and ``margin_jitter`` the
    largest random addition to each (seconds); ``silence_db`` how far below the
    loudest 10 ms frame a frame counts as silence.
    """

    sample_rate: int = 24_000
    loudness: float = -23.0
    loudness_jitter: float = 0.3
    margin: float = 0.15
    margin_jitter: float = 0.1
    silence_db: float = -45.0

    def __post_init__(self):
        if not 8000 <= self.sample_rate <= 192_000:
            raise ValueError(f"sample_rate must be within 8000..192000 Hz, got {self.sample_rate}")
        if not -40.0 <= self.loudness <= self.ceiling_limit:
            raise ValueError(
                f"loudness must be within -40..{self.ceiling_limit:g} LUFS, got {self.loudness}"
            )
        if not 0.0 <= self.loudness_jitter < 0.5:
            raise ValueError(
                f"loudness_jitter must be within [0, 0.5) LU, got {self.loudness_jitter}"
            )
        if self.margin < 0 or self.margin_jitter < 0 or self.silence_db >= 0:
            raise ValueError(f"invalid margins or silence threshold: {self}")

    @property
    def ceiling_limit(self) -> float:
        """Highest loudness target that leaves the peak ceiling under the safety ceiling."""
        return SAFETY_CEILING_DB - HEADROOM_DB - self.loudness_jitter

    @property
    def ceiling(self) -> float:
        """Peak level (dBFS) limited clips are brought to, before the loudness jitter."""
        return self.loudness + HEADROOM_DB

    def signature(self) -> str:
        """The settings :func:`shape` depends on, as text (part of the shaped-clip cache key)."""
        shaping = asdict(self)
        for name in ("loudness_jitter", "margin", "margin_jitter"):
            del shaping[name]
        shaping.update(headroom=HEADROOM_DB, depth=MAX_LIMIT_DB, limiter=LIMITER_SECONDS,
                       fade=FADE_SECONDS, quality=RESAMPLE_QUALITY)  # fmt: skip
        return json.dumps(shaping, sort_keys=True)


def blind(outputs: Sequence[Output], params: BlindingParams,
          rng: np.random.Generator) -> tuple[Output, ...]:  # fmt: skip
    """The clips of one battle in one form (:func:`shape` then :func:`deliver`), uncached."""
    return deliver([shape(o, params) for o in outputs], params, rng)


def shape(output: Output, params: BlindingParams) -> Output:
    """One clip at the delivery rate, trimmed to its speech, at the target loudness, peaks limited.

    Deterministic; 16-bit without dither (the dither is drawn per delivery).
    A silent clip comes back as one silent sample.
    """
    rate = params.sample_rate
    x = resample(output.samples / INT16_FULL_SCALE, output.sample_rate, rate)
    start, stop = speech_bounds(x, rate, params.silence_db)
    x = fade(x[start:stop], rate)
    if not np.any(x):
        return _pcm(rate, np.zeros(1, dtype=np.int16))
    y = level(x, rate, params.loudness, params.ceiling, params.margin + params.margin_jitter / 2)
    return _pcm(rate, np.round(y * INT16_FULL_SCALE).astype(np.int16))


def deliver(shaped: Sequence[Output], params: BlindingParams,
            rng: np.random.Generator) -> tuple[Output, ...]:  # fmt: skip
    """Shaped clips as the browser gets them: own loudness offset and lead, one length, dithered."""
    rate = params.sample_rate
    if any(o.sample_rate != rate for o in shaped):
        raise BlindingError(f"clips must be shaped at {rate} Hz first")
    gains = 10 ** (rng.uniform(-params.loudness_jitter, params.loudness_jitter, len(shaped)) / 20)
    leads = _samples(params.margin + rng.uniform(0, params.margin_jitter, len(shaped)), rate)
    tail = int(_samples(params.margin + rng.uniform(0, params.margin_jitter), rate))
    length = max(lead + len(o.samples) for lead, o in zip(leads, shaped, strict=True)) + tail
    delivered = []
    for gain, lead, clip in zip(gains, leads, shaped, strict=True):
        # The dither over the whole length (margins included), the gained clip added in place;
        # shaped clips are int16, so this is already in LSB.
        scaled = tpdf_dither(rng, length)
        scaled[lead : lead + len(clip.samples)] += clip.samples * np.float32(gain)
        delivered.append(_pcm(rate, to_int16(scaled)))
    return tuple(delivered)


def _pcm(rate: int, samples: np.ndarray) -> Output:
    """An audio Output of samples this module made from a checked one.

    Not :meth:`Output.from_audio`: that refuses silence, which a clip cut to its
    speech, or dither over a silent one, may legitimately be here.
    """
    samples = np.ascontiguousarray(samples, dtype=np.int16)
    samples.flags.writeable = False
    return Output(modality="audio", sample_rate=int(rate), samples=samples)


def resample(x: np.ndarray, rate: int, target: int) -> np.ndarray:
    """``x`` (floats) from ``rate`` to ``target`` Hz with soxr; always through the
    resampler, even at equal rates, so every engine's clip costs the same steps."""
    y = soxr.resample(np.asarray(x, dtype=np.float64), rate, target, quality=RESAMPLE_QUALITY)
    return np.asarray(y, dtype=np.float64)


def speech_bounds(x: np.ndarray, rate: int, silence_db: float) -> tuple[int, int]:
    """[start, stop) of the speech: from the first to the last 10 ms frame whose RMS is
    within ``silence_db`` of the loudest frame. ``(0, 0)`` for silence."""
    size = max(1, round(FRAME_SECONDS * rate))
    frames = len(x) // size
    if frames == 0:
        return (0, len(x)) if np.any(x) else (0, 0)
    power = np.mean(np.square(x[: frames * size].reshape(frames, size)), axis=1)
    loudest = power.max()
    if loudest <= 0:
        return 0, 0
    voiced = np.flatnonzero(power >= loudest * 10 ** (silence_db / 10))
    return int(voiced[0]) * size, min(len(x), (int(voiced[-1]) + 1) * size)


def fade(x: np.ndarray, rate: int) -> np.ndarray:
    """``x`` with raised-cosine fades of :data:`FADE_SECONDS` at both ends (a copy)."""
    n = min(round(FADE_SECONDS * rate), len(x) // 2)
    y = np.array(x, dtype=np.float64)
    if n > 0:
        ramp = 0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
        y[:n] *= ramp
        y[len(y) - n :] *= ramp[::-1]
    return y


def limit_peaks(x: np.ndarray, ceiling: float, rate: int) -> np.ndarray:
    """``x`` with no sample above ``ceiling`` (linear), by a smooth gain, not clipping.

    The gain each sample needs is spread by a moving minimum over
    ±:data:`LIMITER_SECONDS`, then smoothed by a moving average over the same
    span: every value averaged is a minimum over a window containing the sample,
    so the smoothed gain never exceeds what the sample needs.
    """
    width = max(1, round(LIMITER_SECONDS * rate))
    magnitude = np.abs(x)
    need = np.minimum(1.0, ceiling / np.maximum(magnitude, np.finfo(float).tiny))
    gain = minimum_filter1d(need, size=2 * width + 1, mode="nearest")
    gain = uniform_filter1d(gain, size=2 * width + 1, mode="nearest")
    return x * np.minimum(gain, need)


def level(
    x: np.ndarray, rate: int, target: float, ceiling: float, margin: float = 0.0
) -> np.ndarray:
    """``x`` scaled to ``target`` LUFS with its peaks limited towards ``ceiling`` dBFS.

    Peaks above the ceiling are brought onto it, by at most :data:`MAX_LIMIT_DB`;
    never above :data:`SAFETY_CEILING_DB`. The limiter takes loudness away, so the
    gain is searched: a first step as if nothing were limited, then secant steps
    on the loudness error, which grows monotonically with the gain (the depth
    cap follows the peak up).
    """
    ceiling_amp, safety_amp = 10 ** (ceiling / 20), 10 ** (SAFETY_CEILING_DB / 20)
    # Measured between silences as delivered (``margin`` seconds each side): the gating
    # blocks that straddle the edges count, which matters for a clip of a second or two.
    edge = np.zeros(round(margin * rate))

    def measure(y: np.ndarray) -> float:
        return loudness(np.concatenate([edge, y, edge]), rate)

    def attempt(gain_db: float) -> tuple[float, np.ndarray]:
        scaled = x * 10 ** (gain_db / 20)
        peak = float(np.max(np.abs(scaled)))
        cap = min(max(ceiling_amp, peak * 10 ** (-MAX_LIMIT_DB / 20)), safety_amp)
        y = scaled
        if peak > cap:  # limited peaks land a hair under the cap: lift them onto it
            y = limit_peaks(scaled, cap, rate)
            y = y * (cap / np.max(np.abs(y)))
        return measure(y) - target, y

    gains = [target - measure(x)]
    error, y = attempt(gains[0])
    errors = [error]
    while abs(errors[-1]) > LOUDNESS_TOLERANCE and len(gains) < MAX_LEVEL_ROUNDS:
        if len(gains) == 1 or errors[-1] == errors[-2]:
            step = -errors[-1]
        else:
            step = -errors[-1] * (gains[-1] - gains[-2]) / (errors[-1] - errors[-2])
        gains.append(gains[-1] + float(np.clip(step, -MAX_GAIN_STEP_DB, MAX_GAIN_STEP_DB)))
        error, y = attempt(gains[-1])
        errors.append(error)
    return y


def _samples(seconds, rate: int):
    return np.round(np.asarray(seconds) * rate).astype(int)


class Blinder:
    """:func:`shape` with a cache, then :func:`deliver`: what the service runs on each battle.

    Shaped clips are kept in an :class:`OutputCache` (its own folder) under a
    hash of the engine's samples and the shaping settings, so a set prompt is
    shaped once (by the warm-up) and a battle costs only :func:`deliver`.
    Outputs of other modalities pass through untouched. Thread-safe.
    """

    def __init__(self, params: BlindingParams, *, cache: OutputCache | None = None,
                 rng: np.random.Generator | None = None):  # fmt: skip
        self.params = params
        self._cache = cache
        self._rng = rng if rng is not None else np.random.default_rng()
        self._rng_lock = threading.Lock()
        self._signature = params.signature().encode()

    def prepare(self, output: Output, source: str | None = None) -> Output:
        """The shaped form of an audio output, from the cache or made (and cached) now.

        ``source``: the output cache's key of ``output`` (:meth:`ModelPool.cache_key`), under
        which its shaped form is kept, so a later battle finds it with :meth:`shaped` without
        reading or hashing the engine's samples. Without it the key is a hash of the samples.
        Outputs of other modalities are returned as they are.
        """
        if output.modality != "audio":
            return output
        key = self._key(output) if source is None else self._source_key(source)
        cached = self._cached(key)
        if cached is not None:
            return cached
        shaped = shape(output, self.params)
        if self._cache is not None:
            self._cache.put(key, shaped)
        return shaped

    def shaped(self, source: str) -> Output | None:
        """The shaped clip of the output the output cache keys ``source``, if it was prepared
        with that source; None otherwise. Reads only the shaped clip (from memory when it
        can): a battle on a set prompt needs nothing else."""
        return self._cached(self._source_key(source))

    def _cached(self, key: str) -> Output | None:
        """The shaped clip under ``key``, unless its rate is not the delivery rate: the cache
        outlives the process, and one damaged bit of a header's rate made every battle that
        drew the clip fail in :func:`deliver` ("clips must be shaped at ... Hz first")
        instead of shaping it again (the new clip then replaces the entry)."""
        cached = None if self._cache is None else self._cache.get(key, "audio")
        return (
            cached if cached is not None and cached.sample_rate == self.params.sample_rate else None
        )

    def has_shaped(self, source: str) -> bool:
        """Whether :meth:`shaped` would find the clip, without reading it: a damaged entry
        (one whose rate :meth:`shaped` refuses) counts as found until it is shaped again
        (the pacer's hold then treats that battle as warm once, no more)."""
        return self._cache is not None and self._cache.has(self._source_key(source), "audio")

    def deliver(self, prepared: Sequence[Output]) -> tuple[Output, ...]:
        """Prepared outputs of one battle as the visitor gets them (:func:`deliver` for audio,
        :func:`~arena_core.space.image_blinding.deliver_images` for images; text as it is)."""
        kinds = {o.modality for o in prepared}
        if len(kinds) > 1:
            raise BlindingError(f"a battle mixes {sorted(kinds)} outputs")
        if not kinds or kinds - {"audio", "image"}:  # text is delivered as it is
            return tuple(prepared)
        with self._rng_lock:  # only the seed is drawn under the lock: deliveries run in parallel
            rng = np.random.default_rng(int(self._rng.integers(2**63)))
        if kinds == {"image"}:
            from arena_core.space.image_blinding import deliver_images  # Pillow: image arenas only

            return deliver_images(prepared, rng)
        return deliver(prepared, self.params, rng)

    def blind(self, outputs: Sequence[Output]) -> tuple[Output, ...]:
        """:meth:`prepare` each output, then :meth:`deliver` them together."""
        return self.deliver([self.prepare(o) for o in outputs])

    def _source_key(self, source: str) -> str:
        return hashlib.sha256(self._signature + b"\0source\0" + source.encode()).hexdigest()

    def _key(self, output: Output) -> str:
        digest = hashlib.sha256(self._signature)
        digest.update(str(output.sample_rate).encode())
        digest.update(np.ascontiguousarray(output.samples, dtype="<i2").tobytes())
        return digest.hexdigest()
