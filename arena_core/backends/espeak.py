"""eSpeak NG through the shared library bundled in the ``espeakng-loader`` wheel, driven with ctypes.

Registry block::

    backend: {type: espeak, voice: en-us+f3, rate: 175, pitch: 50}
    backend: {type: espeak, voices: {en: en-us, de: de, fr: fr}}   # multilingual
    backend: {type: espeak, voice: ja, language: ja, reading: kana}  # Japanese via Open JTalk

``voice`` is any eSpeak NG voice name, optionally with a ``+variant``
(``en-us+f3``, ``en+klatt``). Synthesis runs in the library's synchronous mode:
``espeak_Synth`` returns after calling our callback with every chunk of 16-bit
samples at the library's rate (22,050 Hz). ``reading: kana`` first turns the
text into katakana with Open JTalk's front end (``pyopenjtalk-plus``): eSpeak
NG's Japanese voice reads kana but names each kanji in English.

The C library keeps one global synthesizer (the current voice, parameters and
callback are process-wide) and is not thread-safe, so every call goes through
:data:`_LIBRARY_LOCK`, and the loaded library is one per process
(:func:`_library`). A call waiting for the lock counts against its timeout.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

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

#: The one lock for the process-global eSpeak NG synthesizer (the library is not thread-safe).
_LIBRARY_LOCK = threading.Lock()

#: espeak_AUDIO_OUTPUT: synthesize in the calling thread, delivering samples to the callback.
_AUDIO_OUTPUT_SYNCHRONOUS = 2
#: espeak_Initialize option: return an error instead of calling exit() when the data is missing.
_INITIALIZE_DONT_EXIT = 0x8000
#: espeak_POSITION_TYPE: positions count characters.
_POS_CHARACTER = 1
#: espeak_Synth flag: the text is UTF-8.
_CHARS_UTF8 = 1
#: espeak_PARAMETER ids.
_PARAM_RATE, _PARAM_PITCH = 1, 3
#: espeak_ERROR code for success.
_EE_OK = 0
#: The one ``reading`` option value: Japanese text is spoken from its katakana reading.
KANA_READING = "kana"
#: Default speaking rate (words per minute) and pitch (0-100) of the library, restored between calls.
DEFAULT_RATE, DEFAULT_PITCH = 175, 50

#: int callback(short *wav, int numsamples, espeak_EVENT *events)
_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class _EspeakLibrary:
    """The loaded library, its sample rate, and the buffer the callback fills during one call."""

    def __init__(self) -> None:
        import espeakng_loader

        self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self._declare()
        data_parent = str(Path(espeakng_loader.get_data_path()).parent).encode()
        rate = self.lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, data_parent, _INITIALIZE_DONT_EXIT
        )
        if rate <= 0:
            raise OSError(f"espeak_Initialize failed with code {rate}")
        self.sample_rate = rate
        self.chunks: list[np.ndarray] = []
        self._callback = _SYNTH_CALLBACK(self._on_samples)  # kept alive as long as the library
        self.lib.espeak_SetSynthCallback(self._callback)

    def _declare(self) -> None:
        lib = self.lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetSynthCallback.argtypes = [_SYNTH_CALLBACK]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        lib.espeak_Info.argtypes = [ctypes.c_void_p]
        lib.espeak_Info.restype = ctypes.c_char_p

    def _on_samples(self, wav, count, _events) -> int:
        if wav and count > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0  # 0 = carry on synthesizing

    def synthesize(self, text: str, voice: str, rate: int, pitch: int) -> np.ndarray:
        """Speak ``text`` with ``voice``; the caller holds :data:`_LIBRARY_LOCK`."""
        code = self.lib.espeak_SetVoiceByName(voice.encode())
        if code != _EE_OK:
            raise ValueError(f"eSpeak NG has no voice {voice!r} (error {code})")
        self.lib.espeak_SetParameter(_PARAM_RATE, rate, 0)
        self.lib.espeak_SetParameter(_PARAM_PITCH, pitch, 0)
        data = text.encode("utf-8")
        self.chunks = []
        code = self.lib.espeak_Synth(
            data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
        )
        self.lib.espeak_Synchronize()
        if code != _EE_OK:
            raise OSError(f"espeak_Synth failed with code {code}")
        chunks, self.chunks = self.chunks, []
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)


@functools.cache
def _library() -> _EspeakLibrary:
    """The process's one eSpeak NG library (the C library itself is process-global).

    Call only while holding :data:`_LIBRARY_LOCK`, which also makes the first,
    initialising call happen once.
    """
    return _EspeakLibrary()


class EspeakBackend(Backend):
    """eSpeak NG formant synthesis (``type: espeak``); options ``voice``/``voices``, ``rate``, ``pitch``."""

    type_name = "espeak"
    modalities = frozenset({"audio"})
    shared_engine = "espeak-ng"  # every voice takes turns on _LIBRARY_LOCK
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            **VOICE_OPTIONS,
            "rate": OptionSpec(NUMBER, help="words per minute, 80-450 (default 175)"),
            "pitch": OptionSpec(NUMBER, help="base pitch 0-100 (default 50)"),
            "reading": OptionSpec((str,), help=f"{KANA_READING}: read Japanese through Open JTalk"),
        }
    )

    @classmethod
    def _extra_problems(cls, options):
        named = options.get("voice") or options.get("voices")
        problems = [] if named else ["needs backend.voice or backend.voices"]
        if options.get("reading") not in (None, KANA_READING):
            problems.append(f"backend.reading can only be {KANA_READING!r}")
        return problems

    def _check_availability(self) -> Availability:
        found = Availability.of_package("espeakng_loader", "espeakng-loader")
        if found.ok and self.options.get("reading") == KANA_READING:
            return Availability.of_package("pyopenjtalk", "pyopenjtalk-plus")
        return found

    def _engine_version(self) -> str:
        if self.options.get("reading") == KANA_READING:
            return f"{package_version('espeakng-loader')}, {package_version('pyopenjtalk-plus')}"
        return package_version("espeakng-loader")

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        voice = self.voice_for(language)
        if self.options.get("reading") == KANA_READING:
            from arena_core.backends.openjtalk import kana_reading

            text = kana_reading(text)
        rate = int(self.options.get("rate") or DEFAULT_RATE)
        pitch = int(
            self.options.get("pitch") if self.options.get("pitch") is not None else DEFAULT_PITCH
        )
        if not _LIBRARY_LOCK.acquire(timeout=timeout):
            raise BackendTimeout(self.model_id, "eSpeak NG was busy for the whole timeout")
        try:
            library = _library()
            samples = library.synthesize(text, voice, rate, pitch)
        finally:
            _LIBRARY_LOCK.release()
        if len(samples) == 0:
            raise BackendError(self.model_id, "eSpeak NG produced no audio")
        return Output.from_audio(library.sample_rate, samples)
