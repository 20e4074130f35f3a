"""Open JTalk (HMM-based Japanese synthesis) from the ``pyopenjtalk-plus`` wheel, and its kana reading.

Registry block::

    backend: {type: openjtalk}                                  # the bundled voice "mei_normal"
    backend: {type: openjtalk, voice: voices/x.htsvoice, speed: 1.1, half_tone: -2}

The wheel bundles the Open JTalk dictionary (naist-jdic) and one HTS voice,
"Mei" (``mei_normal``, by the MMDAgent project, Nagoya Institute of
Technology, CC-BY-3.0), so it runs with no download. Text goes through Open
JTalk's front end (readings, accents) to full-context labels, which an
HTS_Engine instance of this backend turns into 48 kHz speech (the rate is the
voice file's). Each backend keeps its own engine and lock: the engine holds
the voice and per-call settings.

:func:`kana_reading` is the same front end's katakana pronunciation of a
text; eSpeak NG's Japanese voice reads only kana (kanji come out as "Chinese
letter" in English), so the espeak backend reads Japanese through it
(``reading: kana``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
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

#: The voice bundled with pyopenjtalk-plus, used when the registry names none.
BUNDLED_VOICE = "mei_normal"
#: The language Open JTalk speaks.
OPENJTALK_LANGUAGE = "ja"
#: HTS_Engine returns floats on the 16-bit scale; anything beyond is clipped to it.
INT16_MIN, INT16_MAX = -32768, 32767


def kana_reading(text: str) -> str:
    """Japanese text as Open JTalk pronounces it, in katakana (``今日は`` -> ``キョーワ``).

    Punctuation that marks pauses (``、``, ``。``) is kept.
    """
    import pyopenjtalk

    return pyopenjtalk.g2p(text, kana=True)


class OpenJTalkBackend(Backend):
    """Open JTalk (``type: openjtalk``); options ``voice``, ``speed``, ``half_tone``."""

    type_name = "openjtalk"
    modalities = frozenset({"audio"})
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "voice": OptionSpec(
                (str,), help=f"{BUNDLED_VOICE} (bundled, default) or an .htsvoice file"
            ),
            "speed": OptionSpec(NUMBER, help="speaking-rate multiplier (default 1)"),
            "half_tone": OptionSpec(NUMBER, help="pitch shift in semitones (default 0)"),
        }
    )

    def __init__(self, model, modality, env=None):
        super().__init__(model, modality, env)
        self._engine = None
        self._engine_lock = threading.Lock()

    @property
    def languages(self) -> frozenset[str]:
        return frozenset({OPENJTALK_LANGUAGE})

    def _voice_path(self) -> Path:
        voice = self.options.get("voice") or BUNDLED_VOICE
        if voice == BUNDLED_VOICE:
            import pyopenjtalk

            return Path(pyopenjtalk.DEFAULT_HTS_VOICE.decode())
        return Path(voice)

    def _check_availability(self) -> Availability:
        found = Availability.of_package("pyopenjtalk", "pyopenjtalk-plus")
        if not found.ok:
            return found
        path = self._voice_path()
        return (
            Availability.yes()
            if path.is_file()
            else Availability.no(f"voice file {path} not found")
        )

    def _engine_version(self) -> str:
        return f"{package_version('pyopenjtalk-plus')}, {self._voice_path().name}"

    def _loaded_engine(self):
        """The HTS_Engine with this backend's voice, loaded once; the caller holds the lock."""
        if self._engine is None:
            from pyopenjtalk.htsengine import HTSEngine

            self._engine = HTSEngine(str(self._voice_path()).encode())
        return self._engine

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        import pyopenjtalk

        self.voice_for(language)  # refuses a prompt in another language
        labels = pyopenjtalk.extract_fullcontext(text)
        if not self._engine_lock.acquire(timeout=timeout):
            raise BackendTimeout(self.model_id, "Open JTalk was busy for the whole timeout")
        try:
            engine = self._loaded_engine()
            # synthesize() resets the engine afterwards, so the settings are given every call.
            engine.set_speed(float(self.options.get("speed") or 1.0))
            engine.add_half_tone(float(self.options.get("half_tone") or 0.0))
            wave, rate = engine.synthesize(labels), engine.get_sampling_frequency()
        finally:
            self._engine_lock.release()
        if len(wave) == 0:
            raise BackendError(self.model_id, "Open JTalk produced no audio")
        samples = np.clip(np.round(wave), INT16_MIN, INT16_MAX).astype(np.int16)
        return Output.from_audio(rate, samples)
