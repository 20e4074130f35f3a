"""SVOX Pico through ``py-nanotts`` (the wheel bundles the language files).

Registry block::

    backend: {type: pico, voice: en-GB}
    backend: {type: pico, voices: {en: en-US, de: de-DE, es: es-ES, fr: fr-FR, it: it-IT}}

Pico returns raw 16 kHz mono 16-bit little-endian PCM. Each ``speak`` call
builds and tears down its own Pico system and **holds the GIL throughout**: run in
the app's process, every typed prompt Pico read stopped all serving for the length
of the synthesis (a profile of typed-prompt load found Pico holding the GIL 28% of
the time). So Pico speaks in a worker process of its own (:data:`PICO_PROCESSES`,
started on first use, at the generation niceness), and the app's threads only wait.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from types import MappingProxyType

from arena_core.backends import audio
from arena_core.backends.base import (
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

#: Pico's fixed output rate (Hz), as documented by py-nanotts.
PICO_SAMPLE_RATE = 16_000
#: Worker processes for Pico (one: its voices are fast; battles queue on it).
PICO_PROCESSES = 1
#: The voices the py-nanotts wheel ships language files for.
PICO_VOICES = frozenset({"en-US", "en-GB", "de-DE", "es-ES", "fr-FR", "it-IT"})


class PicoBackend(Backend):
    """SVOX Pico (``type: pico``); options ``voice``/``voices``, ``speed``, ``pitch``, ``volume``."""

    type_name = "pico"
    modalities = frozenset({"audio"})
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
        voice = self.voice_for(language)
        options = (self.options.get("speed"), self.options.get("pitch"), self.options.get("volume"))
        try:
            pcm = _workers().submit(speak, text, voice, *options).result(timeout=timeout)
        except FutureTimeout:
            raise BackendTimeout(self.model_id, f"Pico took over {timeout:g} s") from None
        except BrokenProcessPool:
            _forget_workers()
            raise BackendError(self.model_id, "Pico's worker process died") from None
        samples = audio.pcm16_to_array(pcm)
        if len(samples) == 0:
            raise BackendError(self.model_id, "Pico produced no audio")
        return Output.from_audio(PICO_SAMPLE_RATE, samples)


def speak(text: str, voice: str, speed, pitch, volume) -> bytes:
    """Pico's PCM for ``text`` (runs in the worker process)."""
    from py_nanotts import NanoTTS

    return NanoTTS().speak(text, voice=voice, speed=speed, pitch=pitch, volume=volume)


_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ProcessPoolExecutor:
    """The Pico worker processes, started on first use ("spawn": the app has threads)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(PICO_PROCESSES, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_lower_priority)  # fmt: skip
        return _pool


def _forget_workers() -> None:
    """Drop a broken pool; the next call starts a new one."""
    global _pool
    with _pool_lock:
        broken, _pool = _pool, None
    if broken is not None:
        broken.shutdown(wait=False, cancel_futures=True)


def _lower_priority() -> None:
    from arena_core.backends.pool import GENERATION_NICE

    with contextlib.suppress(OSError):  # not allowed here: slower to yield, never wrong
        os.setpriority(os.PRIO_PROCESS, 0, GENERATION_NICE)
