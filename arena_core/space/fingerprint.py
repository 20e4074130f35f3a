"""The attacker of a blind battle: name both models before the vote from what a client sees.

An audit tool for ``arena_core.space.blinding``: the test suite and
``bench/blinding.py`` play it against the running app. It learns from revealed
battles (a vote reveals the models; votes over the rate limit still reveal, so
learning costs nothing) and names the models of new battles before voting.

What it looks at, per clip: the URL, a hash of the bytes, the WAV header, the
sample rate, the length in samples, the peak and the RMS level; per battle,
how long the request took (Gradio's reported duration, or the client's own
stopwatch). Two kinds of evidence:

* **identifiers** (URL, bytes hash, header bytes, and length in samples on the
  same prompt): a value seen before with a model names that model;
* **signatures**, per model over all prompts: the rate (categorical), the peak
  and RMS level in dB and the battle's duration (Gaussians per model). These
  generalise to prompts the attacker never saw revealed.

It scores every ordered pair of known models (naive Bayes) and names the best.
It does not memorise a clip's *sound* per prompt (its energy or waveform): a
listener who remembers the clips can do that too, and no delivery can hide it
(see the blinding module docstring).

**The listener's baseline.** Blind means that nothing a client receives names a
model *better than listening does*. A listener hears each engine's voice: its
timbre. ``timbre`` evidence is a crude stand-in for that ear, the clip's
long-term spectrum in 16 bands (level removed), learnt per model like the
signatures. Peak and RMS level after loudness normalisation are properties of
the voice too (its crest factor and spectral tilt), so the test holds the
attacker's best, from everything the client sees, to this baseline.
"""

from __future__ import annotations

import hashlib
import io
import math
import wave
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

#: Score of a matching identifier (log-likelihood units): it outweighs any signature.
IDENTIFIER_WEIGHT = 50.0
#: Smallest standard deviation of a signature: levels in dB, durations in log-seconds.
MIN_SD = {"peak_db": 0.05, "rms_db": 0.05, "log_seconds": 0.01}
#: Bytes of a WAV file's header (RIFF, fmt and data chunk headers of a plain PCM file).
WAV_HEADER_BYTES = 44
#: The listener's baseline: bands of the long-term spectrum, log-spaced over speech (Hz).
TIMBRE_BANDS, TIMBRE_LOW, TIMBRE_HIGH = 16, 100.0, 8000.0
#: Frame length of that spectrum (samples), and the share of the loudest frames it averages
#: (the speech, not the silence around it).
TIMBRE_FRAME, TIMBRE_LOUDEST = 1024, 0.5
#: Smallest standard deviation of a timbre band (log10 power).
MIN_TIMBRE_SD = 0.02


@dataclass(frozen=True)
class Clip:
    """What a client can measure of one delivered clip."""

    url: str
    digest: str
    header: bytes
    rate: int
    samples: int
    peak_db: float
    rms_db: float
    #: Long-term spectrum in :data:`TIMBRE_BANDS` bands, log10, mean removed (the level).
    timbre: tuple[float, ...] = ()


@dataclass(frozen=True)
class Sighting:
    """One battle as the client saw it before voting."""

    prompt: str
    a: Clip
    b: Clip
    seconds: float


def clip_features(url: str, data: bytes) -> Clip:
    """Measure a served WAV file (``data``) fetched from ``url``."""
    with wave.open(io.BytesIO(data)) as w:
        rate, frames = w.getframerate(), w.readframes(w.getnframes())
    x = np.frombuffer(frames, dtype="<i2").astype(np.float64)
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    rms = float(np.sqrt(np.mean(np.square(x)))) if len(x) else 0.0
    return Clip(url=url, digest=hashlib.sha256(data).hexdigest(), header=data[:WAV_HEADER_BYTES],
                rate=rate, samples=len(x), peak_db=_db(peak), rms_db=_db(rms),
                timbre=timbre(x, rate))  # fmt: skip


def timbre(x: np.ndarray, rate: int) -> tuple[float, ...]:
    """The long-term spectrum of the loudest frames in log-spaced bands (see ``Clip.timbre``)."""
    frames = len(x) // TIMBRE_FRAME
    if frames < 2:
        return (0.0,) * TIMBRE_BANDS
    blocks = x[: frames * TIMBRE_FRAME].reshape(frames, TIMBRE_FRAME) * np.hanning(TIMBRE_FRAME)
    energy = np.square(blocks).sum(axis=1)
    loud = blocks[energy >= np.quantile(energy, 1 - TIMBRE_LOUDEST)]
    power = np.square(np.abs(np.fft.rfft(loud, axis=1))).mean(axis=0)
    freqs = np.fft.rfftfreq(TIMBRE_FRAME, 1 / rate)
    edges = np.geomspace(TIMBRE_LOW, min(TIMBRE_HIGH, rate / 2), TIMBRE_BANDS + 1)
    bands = np.array([power[(freqs >= lo) & (freqs < hi)].sum() for lo, hi in pairwise(edges)])
    logs = np.log10(np.maximum(bands, 1e-12))
    return tuple(float(v) for v in logs - logs.mean())


def _db(amplitude: float) -> float:
    return 20 * math.log10(max(amplitude, 1.0) / 32768)


class FingerprintTable:
    """Evidence learned from revealed battles, and the naming of new ones (module docstring).

    ``use`` restricts the evidence: any of ``url``, ``digest``, ``header``,
    ``length``, ``rate``, ``peak_db``, ``rms_db``, ``seconds``.
    """

    ALL = ("url", "digest", "header", "length", "rate", "peak_db", "rms_db", "seconds")
    #: The listener's baseline (not part of ALL: it is what hearing reveals).
    LISTENER = ("timbre",)

    def __init__(self, use: tuple[str, ...] = ALL):
        unknown = set(use) - set(self.ALL) - set(self.LISTENER)
        if unknown:
            raise ValueError(f"unknown evidence {sorted(unknown)}")
        self.use = tuple(use)
        self._ids: dict[tuple, str] = {}
        self._rates: dict[str, Counter] = defaultdict(Counter)
        self._values: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.models: set[str] = set()

    def learn(self, seen: Sighting, model_a: str, model_b: str) -> None:
        """Remember a revealed battle."""
        for clip, model in ((seen.a, model_a), (seen.b, model_b)):
            self.models.add(model)
            for key in self._identifiers(seen.prompt, clip):
                self._ids[key] = model
            self._rates[model][clip.rate] += 1
            self._values[(model, "peak_db")].append(clip.peak_db)
            self._values[(model, "rms_db")].append(clip.rms_db)
            self._values[(model, "log_seconds")].append(math.log(max(seen.seconds, 1e-4)))
            for band, value in enumerate(clip.timbre):
                self._values[(model, f"timbre{band}")].append(value)

    def name(self, seen: Sighting) -> tuple[str, str]:
        """The most likely (model A, model B) of an unrevealed battle."""
        if len(self.models) < 2:
            raise ValueError("learn at least one battle first")
        side_a = {m: self._side(seen.prompt, seen.a, m) for m in self.models}
        side_b = {m: self._side(seen.prompt, seen.b, m) for m in self.models}
        timing = {m: self._timing(seen.seconds, m) for m in self.models}
        pairs = [(a, b) for a in self.models for b in self.models if a != b]
        return max(pairs, key=lambda p: side_a[p[0]] + side_b[p[1]] + timing[p[0]] + timing[p[1]])

    def _identifiers(self, prompt: str, clip: Clip) -> list[tuple]:
        keys = {"url": ("url", clip.url), "digest": ("digest", clip.digest),
                "header": ("header", prompt, clip.header), "length": ("length", prompt, clip.samples)}  # fmt: skip
        return [key for kind, key in keys.items() if kind in self.use]

    def _side(self, prompt: str, clip: Clip, model: str) -> float:
        score = 0.0
        for key in self._identifiers(prompt, clip):
            if key in self._ids:
                score += IDENTIFIER_WEIGHT if self._ids[key] == model else -IDENTIFIER_WEIGHT
        if "rate" in self.use:
            rates = self._rates[model]
            score += math.log((rates[clip.rate] + 1) / (sum(rates.values()) + len(rates) + 1))
        for feature in ("peak_db", "rms_db"):
            if feature in self.use:
                score += self._gaussian(model, feature, getattr(clip, feature))
        if "timbre" in self.use:
            score += sum(self._gaussian(model, f"timbre{band}", value)
                         for band, value in enumerate(clip.timbre))  # fmt: skip
        return score

    def _timing(self, seconds: float, model: str) -> float:
        if "seconds" not in self.use:
            return 0.0
        return self._gaussian(model, "log_seconds", math.log(max(seconds, 1e-4)))

    def _gaussian(self, model: str, feature: str, x: float) -> float:
        values = self._values.get((model, feature))
        if not values:
            return 0.0
        floor = MIN_TIMBRE_SD if feature.startswith("timbre") else MIN_SD[feature]
        mean, sd = float(np.mean(values)), max(float(np.std(values)), floor)
        return -0.5 * ((x - mean) / sd) ** 2 - math.log(sd)


@dataclass(frozen=True)
class Score:
    """How often the attacker named models right on ``battles`` new battles, against chance."""

    battles: int
    both: int
    sides: int
    models: int

    @property
    def both_rate(self) -> float:
        return self.both / self.battles

    @property
    def side_rate(self) -> float:
        return self.sides / (2 * self.battles)

    @property
    def both_chance(self) -> float:
        """Naming both by guessing: one ordered pair among ``models * (models - 1)``."""
        return 1 / (self.models * (self.models - 1))

    @property
    def side_chance(self) -> float:
        return 1 / self.models


def score(table: FingerprintTable, battles: list[tuple[Sighting, str, str]]) -> Score:
    """Name each battle's models with ``table`` and count what was right."""
    both = sides = 0
    for seen, model_a, model_b in battles:
        guess_a, guess_b = table.name(seen)
        both += guess_a == model_a and guess_b == model_b
        sides += (guess_a == model_a) + (guess_b == model_b)
    return Score(len(battles), both, sides, len(table.models))
