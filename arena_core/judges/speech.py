"""Two offline speech judges, each with its own view of a clip: are the words right, is
the voice alive.

* :class:`IntelligibilityJudge` (kind ``intelligibility``) transcribes both clips
  with an offline recogniser and prefers the lower word error rate against the
  prompt, the measure TTS papers report as intelligibility.
* :class:`ProsodyJudge` (kind ``prosody``) tracks each clip's pitch and prefers
  the wider pitch range, the measure of a lively rather than a monotone reading.

Both are deterministic (the same case always gets the same verdict) and need no
network: the recogniser's model ships in the ``pocketsphinx`` wheel, the pitch
tracker is numpy (:mod:`arena_core.judges.pitch`). ``pocketsphinx`` and ``jiwer``
are imported at first use, so this module (and the prosody judge) loads without
them; the intelligibility judge then answers :class:`JudgeError` naming the package.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
import soxr

from arena_core.backends.audio import INT16_FULL_SCALE, float_to_int16
from arena_core.backends.base import normalize_language
from arena_core.backends.output import Output
from arena_core.judges import pitch, transcript
from arena_core.judges.base import Case, Judge, JudgeError, JudgeSpec, Verdict

logger = logging.getLogger(__name__)

#: Default tie margin of the intelligibility judge (word error rate). The recogniser's own
#: noise: one clip delivered again (new dither, margins, level) changes its WER by a median
#: of 0-0.13 across the offline English engines (up to 0.4 for single clips), while their
#: median WERs lie 0.1-0.5 apart (bench/judges_speed.py).
WER_MARGIN = 0.1
#: Default word error rate above which a clip failed. Between what the recogniser makes of
#: the right sentence (medians 0.11-0.66 for every offline engine but eSpeak's formant
#: voices, 0.78-0.96) and of a clip of another sentence (1.0-1.4) (bench/judges_speed.py).
FAIL_WER = 0.75
#: Default tie margin of the prosody judge (semitones of pitch range): the just noticeable
#: difference in the size of a pitch movement, 1.5-2 semitones for the listeners who hear
#: it at all ('t Hart 1981, "Differential sensitivity to pitch distance, particularly in
#: speech", JASA 69(3)).
RANGE_MARGIN = 1.5
#: Default pitch range (semitones) under which a clip is monotone; both under it: both bad.
#: Flite with its intonation flattened measures 0.3-0.7; the offline engines' medians are
#: 2.6-9 (bench/judges_speed.py).
MONOTONE_RANGE = 1.0
#: Percentiles of voiced F0 whose distance is the pitch range: robust to octave errors in
#: up to a tenth of the frames at each end.
RANGE_PERCENTILES = (10, 90)
#: Least voiced speech (seconds) for a pitch range to mean anything; less scores 0.
MIN_VOICED_SECONDS = 0.2
#: Longest transcript quoted in a verdict's reason (characters).
QUOTE_CHARS = 80


class Recogniser(Protocol):
    """What the intelligibility judge needs from a speech recogniser.

    ``transcribe`` takes mono int16 samples at ``sample_rate`` and returns the words
    heard; ``languages`` are the primary language subtags it understands (``en``).
    """

    sample_rate: int
    languages: frozenset[str]

    def transcribe(self, samples: np.ndarray) -> str: ...


class PocketsphinxRecogniser:
    """CMU PocketSphinx with the US English model its wheel ships (acoustic model, 3-gram
    language model, CMU dictionary), at 16 kHz. Loaded at first use (~0.3 s); one decoder,
    used by one thread at a time (it keeps state between calls)."""

    sample_rate = 16_000
    languages = frozenset({"en"})

    def __init__(self) -> None:
        self._decoder = None
        self._lock = threading.Lock()

    def transcribe(self, samples: np.ndarray) -> str:
        pcm = np.ascontiguousarray(samples, dtype="<i2").tobytes()
        with self._lock:
            decoder = self._load()
            decoder.start_utt()
            decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            hypothesis = decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""

    def _load(self):
        if self._decoder is None:
            try:
                import pocketsphinx
            except ImportError:
                raise JudgeError(
                    "the intelligibility judge needs pocketsphinx (pip install pocketsphinx)"
                ) from None
            self._decoder = pocketsphinx.Decoder(loglevel="FATAL")
        return self._decoder


def _number(options: Mapping[str, Any], key: str, default: float, low: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= low:
        raise ValueError(f"judge option {key} must be a number >= {low:g}, got {value!r}")
    return float(value)


def _check_options(spec: JudgeSpec, known: tuple[str, ...]) -> None:
    unknown = sorted(set(spec.options) - set(known))
    if unknown:
        raise ValueError(
            f"judge {spec.id!r} ({spec.kind}): unknown option(s) {', '.join(unknown)} "
            f"(known: {', '.join(known)})"
        )


def choose(score_a: float, score_b: float, margin: float, *, higher_is_better: bool,
           bad: float) -> str:  # fmt: skip
    """``both_bad`` when both scores are worse than ``bad``; else ``a`` or ``b``, the better
    score when it is better by more than ``margin``; else ``tie``."""
    sign = 1.0 if higher_is_better else -1.0
    if sign * (score_a - bad) < 0 and sign * (score_b - bad) < 0:
        return "both_bad"
    difference = sign * (score_a - score_b)
    if abs(difference) <= margin:
        return "tie"
    return "a" if difference > 0 else "b"


def _audio(output: Output, side: str) -> Output:
    if output.modality != "audio" or output.samples is None:
        raise JudgeError(
            f"side {side} is {output.modality}, not audio: a speech judge hears only audio"
        )
    return output


class IntelligibilityJudge(Judge):
    """Prefers the clip whose transcript has the lower word error rate against the prompt.

    Options: ``margin`` (WER difference within which it is a tie, default
    :data:`WER_MARGIN`), ``fail_wer`` (both clips above it: ``both_bad``, default
    :data:`FAIL_WER`). Injected: ``recogniser`` (default :class:`PocketsphinxRecogniser`).

    The prompt and the transcript are compared in one normal form
    (:mod:`arena_core.judges.transcript`: case, punctuation, numbers read as
    words); a prompt whose numbers have several readings (a year) counts each clip
    against its closest reading. Scores are the two WERs (0 is perfect; above 1
    when the recogniser heard extra words).

    Its view: whether a listener, here a machine one, gets the words. What it
    misses: everything else (voice, naturalness, prosody), and its recogniser's
    own taste: trained on human speech, pocketsphinx hears some synthetic voices
    (eSpeak's formant voices) far worse than people do, so its boards measure
    "intelligible to pocketsphinx"; it also hears narrowband (8 kHz) voices worse
    than a person would. It speaks only English: a case in another language is
    refused with :class:`JudgeError`; when the case gives no language, only a prompt
    in another script is caught (a French prompt would be judged as English).
    """

    option_names = ("margin", "fail_wer")

    def __init__(self, spec: JudgeSpec, *, recogniser: Recogniser | None = None):
        super().__init__(spec)
        _check_options(spec, self.option_names)
        self.margin = _number(spec.options, "margin", WER_MARGIN, 0.0)
        self.fail_wer = _number(spec.options, "fail_wer", FAIL_WER, 0.0)
        self.recogniser = recogniser if recogniser is not None else PocketsphinxRecogniser()

    def judge(self, case: Case) -> Verdict:
        self._check_language(case)
        references = transcript.readings(case.prompt)
        if not references[0]:
            raise JudgeError(f"the prompt {case.prompt!r} has no words to check a clip against")
        heard_a = self.transcribe(_audio(case.a, "A"))
        heard_b = self.transcribe(_audio(case.b, "B"))
        wer_a, wer_b = word_error_rate(references, heard_a), word_error_rate(references, heard_b)
        choice = choose(wer_a, wer_b, self.margin, higher_is_better=False, bad=self.fail_wer)
        reason = (
            f"word error rate A {wer_a:.3f}, B {wer_b:.3f} (tie within {self.margin:g}, "
            f"both bad above {self.fail_wer:g}); heard A: {_quote(heard_a)}; B: {_quote(heard_b)}"
        )
        return Verdict(choice, scores=(wer_a, wer_b), reason=reason)

    def transcribe(self, output: Output) -> str:
        """What the recogniser hears in an audio output, resampled to its rate."""
        rate = self.recogniser.sample_rate
        samples = output.samples
        if output.sample_rate != rate:
            floats = samples.astype(np.float32) / INT16_FULL_SCALE
            samples = float_to_int16(soxr.resample(floats, output.sample_rate, rate, quality="HQ"))
        return self.recogniser.transcribe(samples)

    def _check_language(self, case: Case) -> None:
        spoken = ", ".join(sorted(self.recogniser.languages))
        if case.language is not None:
            primary = normalize_language(case.language).split("-")[0]
            if primary not in self.recogniser.languages:
                raise JudgeError(
                    f"judge {self.id!r}: its recogniser understands {spoken} only, "
                    f"not {case.language!r}"
                )
            return
        foreign = sorted({c for c in case.prompt if c.isalpha() and not _is_latin(c)})
        if foreign:
            raise JudgeError(
                f"judge {self.id!r}: its recogniser understands {spoken} only, and the prompt "
                f"(language not given) has letters of another script: {''.join(foreign[:10])}"
            )


def _is_latin(letter: str) -> bool:
    return unicodedata.name(letter, "").startswith("LATIN")


def word_error_rate(references: list[str], heard: str) -> float:
    """The lowest WER of ``heard`` (normalised here) against any of the normalised readings."""
    try:
        import jiwer
    except ImportError:
        raise JudgeError("the intelligibility judge needs jiwer (pip install jiwer)") from None
    hypothesis = transcript.normalise(heard)
    return min(float(jiwer.wer(reference, hypothesis)) for reference in references)


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "...")


def pitch_range(output: Output) -> tuple[float, float]:
    """The pitch range (semitones between the 10th and 90th percentiles of F0 over voiced
    frames) of an audio output, and its voiced seconds. 0 when it has less than
    :data:`MIN_VOICED_SECONDS` of voicing."""
    f0 = pitch.f0_track(output.samples, output.sample_rate)
    voiced = f0[np.isfinite(f0)]
    seconds = len(voiced) * pitch.HOP_SECONDS
    if seconds < MIN_VOICED_SECONDS:
        return 0.0, seconds
    low, high = np.percentile(12 * np.log2(voiced), RANGE_PERCENTILES)
    return float(high - low), seconds


class ProsodyJudge(Judge):
    """Prefers the clip with the wider pitch range: the livelier intonation.

    Options: ``margin`` (semitones within which it is a tie, default
    :data:`RANGE_MARGIN`), ``monotone`` (both ranges below it: ``both_bad``,
    default :data:`MONOTONE_RANGE`). Scores are the two pitch ranges in semitones.

    Why this view: the intelligibility judge cannot tell a flat, robotic reading
    from an expressive one if both get the words right, and flat intonation is
    the classic complaint about synthetic speech; in listening tests monotone
    speech is rated less natural and less engaging. The pitch range in semitones
    is independent of the voice's register (a bass and a soprano with the same
    melody score the same) and of the clip's level and sample rate.

    What it misses: more is not always better (erratic or misplaced pitch
    movements score high, as does a voice that sings); it does not know where the
    accents should fall, nor timing, rhythm, voice quality or noise; in tone
    languages (Mandarin, Cantonese, Vietnamese, Thai) pitch marks words, so the
    range measures the words as much as the intonation. A clip with less than
    :data:`MIN_VOICED_SECONDS` of voiced speech (whispered, unvoiced, silent)
    scores 0.
    """

    option_names = ("margin", "monotone")

    def __init__(self, spec: JudgeSpec):
        super().__init__(spec)
        _check_options(spec, self.option_names)
        self.margin = _number(spec.options, "margin", RANGE_MARGIN, 0.0)
        self.monotone = _number(spec.options, "monotone", MONOTONE_RANGE, 0.0)

    def judge(self, case: Case) -> Verdict:
        range_a, voiced_a = pitch_range(_audio(case.a, "A"))
        range_b, voiced_b = pitch_range(_audio(case.b, "B"))
        choice = choose(range_a, range_b, self.margin, higher_is_better=True, bad=self.monotone)
        reason = (
            f"pitch range A {range_a:.2f}, B {range_b:.2f} semitones over {voiced_a:.2f} s and "
            f"{voiced_b:.2f} s voiced (tie within {self.margin:g}, both bad under {self.monotone:g})"
        )
        return Verdict(choice, scores=(range_a, range_b), reason=reason)
