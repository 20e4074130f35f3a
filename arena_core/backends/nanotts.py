"""SVOX Pico through ``py-nanotts`` (the wheel bundles the language files).

Registry block::

    backend: {type: pico, voice: en-GB}
    backend: {type: pico, voices: {en: en-US, de: de-DE, es: es-ES, fr: fr-FR, it: it-IT}}

Pico returns raw 16 kHz mono 16-bit little-endian PCM. Each ``speak`` call
builds and tears down its own Pico system and **holds the GIL throughout**: run in
the app's process, every typed prompt Pico read stopped all serving for the length
of the synthesis (a profile of typed-prompt load found Pico holding the GIL 28% of
the time). So Pico speaks in a worker process of its own (:data:`WORKER`, started on
first use, at the generation niceness; ``arena_core.workers.pico``), and the app's
threads only wait.

Pico obeys markup in its text (``<play file=...>`` mixes a WAV file of the server into
the speech, ``<genfile file=...>`` writes the speech to a file, any case, spaces
allowed after the ``<``), so every ``<`` of a prompt is taken out before Pico sees it
(:func:`plain_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from arena_core.backends import audio
from arena_core.backends.base import (
    GENERATION_NICE,
    NUMBER,
    VOICE_OPTIONS,
    Availability,
    Backend,
    BackendError,
    BackendTimeout,
    OptionSpec,
    package_version,
)
from arena_core.backends.output import Output
from arena_core.workers.pico import PicoProcess, PicoWorkerError

#: Pico's fixed output rate (Hz), as documented by py-nanotts.
PICO_SAMPLE_RATE = 16_000
#: The one character that opens a Pico tag (no full-width or other look-alike does).
_TAG_OPEN = "<"
#: The voices the py-nanotts wheel ships language files for.
PICO_VOICES = frozenset({"en-US", "en-GB", "de-DE", "es-ES", "fr-FR", "it-IT"})


class PicoBackend(Backend):
    """SVOX Pico (``type: pico``); options ``voice``/``voices``, ``speed``, ``pitch``, ``volume``."""

    type_name = "pico"
    modalities = frozenset({"audio"})
    shared_engine = "pico"  # every voice takes turns on the one WORKER process
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            **VOICE_OPTIONS,
            "speed": OptionSpec(NUMBER, help="speed multiplier 0.2-5.0"),
            "pitch": OptionSpec(NUMBER, help="pitch multiplier 0.5-2.0"),
            "volume": OptionSpec(NUMBER, help="volume multiplier 0-5.0"),
        }
    )

    @classmethod
    def _extra_problems(cls, options):
        voices = [options.get("voice"), *(options.get("voices") or {}).values()]
        named = [v for v in voices if v]
        if not named:
            return ["needs backend.voice or backend.voices"]
        unknown = sorted({v for v in named if v not in PICO_VOICES})
        if unknown:
            return [
                f"Pico has no voice {', '.join(unknown)} (has {', '.join(sorted(PICO_VOICES))})"
            ]
        return []

    def _check_availability(self) -> Availability:
        return Availability.of_package("py_nanotts", "py-nanotts")

    def _engine_version(self) -> str:
        return package_version("py-nanotts")

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        text = plain_text(text)  # a visitor's tags must not reach Pico
        request = {"text": text, "voice": self.voice_for(language), "speed": self.options.get("speed"),
                   "pitch": self.options.get("pitch"), "volume": self.options.get("volume")}  # fmt: skip
        try:
            pcm = WORKER.speak(request, timeout)
        except TimeoutError as exc:
            raise BackendTimeout(self.model_id, str(exc)) from None
        except PicoWorkerError as exc:
            raise BackendError(self.model_id, str(exc)) from None
        samples = audio.pcm16_to_array(pcm)
        if len(samples) == 0:
            raise BackendError(self.model_id, "Pico produced no audio")
        return Output.from_audio(PICO_SAMPLE_RATE, samples)


def plain_text(text: str) -> str:
    """``text`` with no markup Pico would obey: a typed ``<play file="/x.wav"/>`` read a
    file of the server into the clip and ``<genfile file="/x.wav">`` wrote one. A ``<``
    becomes a space (Pico has no escape for it; a tag needs it, so none is left)."""
    return text.replace(_TAG_OPEN, " ")


#: The one Pico worker process of this app (every Pico voice speaks through it, in turn).
WORKER = PicoProcess(nice=GENERATION_NICE)
