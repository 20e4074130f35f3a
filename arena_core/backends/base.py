"""The backend interface: one model of the registry, able to say whether it can run here and to generate.

A :class:`Backend` is built from a registry :class:`~arena_core.registry.Model`
(its ``backend:`` block gives the type and options) plus an environment mapping
for tokens. Construction does no I/O; :meth:`Backend.availability` is cheap
(an import check, a ``PATH`` look-up, an environment variable) and never touches
the network; :meth:`Backend.generate` does the work and raises only
:class:`BackendError` and its subclasses, whatever the engine underneath raised,
so callers handle one family of errors.

Options are declared per class (:attr:`Backend.options_spec`) and checked when
the backend is built, so a typo in ``registry.yaml`` is refused at start-up
with the model and option named instead of surfacing mid-battle.

Languages: a model may declare which prompt languages it can speak, either with
``voices: {en: en-us, de: de}`` (one voice per language) or with a single
``voice`` plus ``language: en``. A model that declares neither is taken to
serve any prompt (the English arena's categories are topics, not languages).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from arena_core.backends.output import Output
from arena_core.printable import controls_escaped
from arena_core.registry import Model

logger = logging.getLogger(__name__)

#: Longest exception text carried into an error's reason (reasons are shown to visitors as one line).
MAX_REASON_CHARS = 200


#: Niceness of the threads that generate (and of the programs, runtime threads and worker
#: processes they start, which inherit it): on two cores, synthesis for typed prompts
#: competes with serving votes and cached battles for the CPU, and the kernel should serve
#: those first.
GENERATION_NICE = 10


class BackendError(Exception):
    """A generation that failed; ``str()`` names the model and gives a one-line reason."""

    def __init__(self, model_id: str, reason: str):
        self.model_id = model_id
        self.reason = one_line(reason)
        super().__init__(f"{model_id}: {self.reason}")


class BackendTimeout(BackendError):  # noqa: N818 - the name the app codes against
    """The generation did not finish within its timeout."""


class BackendUnavailable(BackendError):  # noqa: N818 - the name the app codes against
    """The model cannot run here (engine missing, no token, no voice for the language, paused)."""


class EngineBusy(BackendUnavailable):
    """The model's engine already runs as many typed prompts as it takes (the pool's
    ``max_typed_per_engine``): refused before it ran, so it says nothing of the model."""


class BackendConfigError(ValueError):
    """Backend blocks in the registry that cannot work: unknown type, missing or mistyped option."""

    def __init__(self, problems: list[str] | tuple[str, ...]):
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


def one_line(text: str) -> str:
    """Collapse whitespace and cut to :data:`MAX_REASON_CHARS` so a reason fits one status line.

    Other control characters are escaped: a reason may quote a hosted service's own error
    message, which the Space's log prints, and an escape sequence in it erased or recoloured
    the operator's log lines in a terminal."""
    flat = controls_escaped(" ".join(str(text).split()))
    return flat if len(flat) <= MAX_REASON_CHARS else flat[: MAX_REASON_CHARS - 1] + "…"


def describe_exception(exc: BaseException) -> str:
    """``TypeName: message`` for an unexpected exception from an engine."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@dataclass(frozen=True)
class Availability:
    """Whether a model can run on this machine; ``reason`` says why not in one line."""

    ok: bool
    reason: str = ""

    @classmethod
    def yes(cls) -> Availability:
        return cls(ok=True, reason="")

    @classmethod
    def no(cls, reason: str) -> Availability:
        return cls(ok=False, reason=one_line(reason))

    @classmethod
    def of_package(cls, import_name: str, distribution: str) -> Availability:
        """Available if ``import_name`` can be imported (checked without importing it)."""
        if importlib.util.find_spec(import_name) is None:
            return cls.no(f"{distribution} not installed (pip install {distribution})")
        return cls.yes()


def package_version(distribution: str) -> str:
    """``name version`` of an installed distribution, for version strings."""
    return f"{distribution} {importlib.metadata.version(distribution)}"


@dataclass(frozen=True)
class OptionSpec:
    """One option of a backend block: the accepted YAML types and whether it is required."""

    types: tuple[type, ...]
    required: bool = False
    help: str = ""


#: Options every text-to-speech backend understands (see the module docstring).
VOICE_OPTIONS: Mapping[str, OptionSpec] = MappingProxyType(
    {
        "voice": OptionSpec((str,), help="the engine's voice name"),
        "voices": OptionSpec((dict,), help="language code -> voice name, for multilingual arenas"),
        "language": OptionSpec((str,), help="the one language a single-voice model speaks"),
    }
)

#: YAML numbers arrive as int or float.
NUMBER = (int, float)


def normalize_language(code: str) -> str:
    """Language codes compare case-insensitively with ``_`` and ``-`` alike (``en_US`` == ``en-us``)."""
    return code.strip().lower().replace("_", "-")


class Backend(ABC):
    """One model's way of generating outputs. Subclasses set the class attributes and :meth:`_generate`."""

    #: The registry ``backend.type`` this class handles.
    type_name: ClassVar[str]
    #: Arena modalities this backend can produce.
    modalities: ClassVar[frozenset[str]]
    #: Option name -> spec; any other key in the backend block is refused.
    options_spec: ClassVar[Mapping[str, OptionSpec]] = MappingProxyType({})
    #: Whether generation calls a remote service (checked once at start-up, see ModelPool.probe_remote).
    remote: ClassVar[bool] = False
    #: The process-wide engine this class's models take turns on (one lock for all of its
    #: voices), or None when each model has its own. The pool blames a timeout on the
    #: model only when no visitor's typed prompt kept that engine busy (``workload.py``).
    shared_engine: ClassVar[str | None] = None

    def __init__(self, model: Model, modality: str, env: Mapping[str, str] | None = None):
        problems = self.option_problems(model.backend.options, modality)
        if problems:
            raise BackendConfigError([f"model {model.id!r}: {p}" for p in problems])
        self.model = model
        self.model_id = model.id
        self.modality = modality
        self.options: Mapping[str, Any] = MappingProxyType(dict(model.backend.options))
        self.env: Mapping[str, str] = env if env is not None else {}
        self._lock = threading.Lock()
        self._availability: Availability | None = None
        self._version: str | None = None

    # -- configuration -----------------------------------------------------------------

    @classmethod
    def option_problems(cls, options: Mapping[str, Any], modality: str) -> list[str]:
        """Everything wrong with a backend block for this class, as readable lines (empty if fine)."""
        problems = []
        if modality not in cls.modalities:
            supported = ", ".join(sorted(cls.modalities))
            problems.append(f"backend {cls.type_name!r} makes {supported}, not {modality}")
        for key, value in options.items():
            spec = cls.options_spec.get(key)
            if spec is None:
                known = ", ".join(sorted(cls.options_spec)) or "none"
                problems.append(
                    f"unknown option backend.{key} for {cls.type_name!r} (known: {known})"
                )
            elif value is not None and not _has_type(value, spec.types):
                wanted = " or ".join(t.__name__ for t in spec.types)
                problems.append(f"option backend.{key} must be {wanted}, got {value!r}")
        for key, spec in cls.options_spec.items():
            if spec.required and options.get(key) is None:
                problems.append(f"missing required option backend.{key} ({spec.help})")
        if "voices" in options and not problems:
            problems.extend(_voices_problems(options["voices"]))
        return problems + cls._extra_problems(options)

    @classmethod
    def _extra_problems(cls, options: Mapping[str, Any]) -> list[str]:
        """Checks that involve several options; subclasses extend."""
        return []

    # -- availability and version ------------------------------------------------------

    def availability(self, *, refresh: bool = False) -> Availability:
        """Whether this model can run here; computed once (cheap, no network) and remembered."""
        with self._lock:
            if self._availability is None or refresh:
                try:
                    self._availability = self._check_availability()
                # A broken install must read as unavailable, not crash start-up.
                except Exception as exc:
                    logger.warning("availability check of %s failed", self.model_id, exc_info=True)
                    self._availability = Availability.no(describe_exception(exc))
            return self._availability

    @abstractmethod
    def _check_availability(self) -> Availability:
        """Is the engine installed / the token set? Must be cheap and must not use the network."""

    @property
    def version(self) -> str:
        """Engine, voice and settings version: part of the cache key, so new engines regenerate."""
        settings = json.dumps(dict(self.options), sort_keys=True, default=str)
        return f"{self._engine_label()} {settings}"

    def _engine_label(self) -> str:
        """``<type> <engine version>``, asked of the engine once."""
        with self._lock:
            if self._version is None:
                try:
                    engine = self._engine_version()
                except Exception as exc:  # e.g. a package without metadata: still a usable key
                    engine = f"unknown ({describe_exception(exc)})"
                self._version = f"{self.type_name} {engine}"
            return self._version

    @property
    def model_version(self) -> str | None:
        """What the vote record calls this model's version (``model_a_version``): the engine
        and voice packages that made the output, e.g. ``piper 1.8.0, 1.0.0``. None when the
        model runs elsewhere and reports none (hosted backends)."""
        return None if self.remote else self._engine_label()  # settings are in the registry

    @abstractmethod
    def _engine_version(self) -> str:
        """The installed engine's version (a package version, a program's ``--version``)."""

    @property
    def engine(self) -> str:
        """What this model's generations wait for: :attr:`shared_engine`, else this backend.

        The key of the process-wide workload (``workload.py``), shared by every arena's
        pool: a shared engine is one lock whichever arena calls it, while a model of its
        own is this object, not its id (two arenas may list the same id, each with its
        own backend). ``id`` is unique among live objects, and a backend with a typed
        generation in flight is alive (its worker thread holds it).
        """
        return self.shared_engine or f"model {self.model_id} (backend {id(self):#x})"

    # -- languages ---------------------------------------------------------------------

    @functools.cached_property
    def languages(self) -> frozenset[str] | None:
        """Normalised language codes this model speaks, or None if it serves any prompt.

        Computed once (the options are read-only): every battle asks every model.
        """
        voices = self.options.get("voices")
        if voices:
            return frozenset(normalize_language(k) for k in voices)
        language = self.options.get("language")
        return frozenset({normalize_language(language)}) if language else None

    def serves(self, language: str | None) -> bool:
        """Can this model answer a prompt of this language (None: a prompt of no stated language)?"""
        languages = self.languages
        return language is None or languages is None or normalize_language(language) in languages

    def voice_for(self, language: str | None) -> str | None:
        """The voice to use for a prompt's language; raises :class:`BackendUnavailable` if none."""
        if not self.serves(language):
            spoken = ", ".join(sorted(self.languages or ()))
            raise BackendUnavailable(
                self.model_id, f"no voice for language {language!r} (speaks {spoken})"
            )
        voices = self.options.get("voices")
        if not voices:
            return self.options.get("voice")
        if language is None:
            return self.options.get("voice") or next(iter(voices.values()))
        wanted = normalize_language(language)
        return next(v for k, v in voices.items() if normalize_language(k) == wanted)

    # -- generation --------------------------------------------------------------------

    def generate(self, text: str, timeout: float, language: str | None = None) -> Output:
        """Generate an output for ``text`` within ``timeout`` seconds.

        ``language`` is the prompt's category in multilingual arenas. Raises
        :class:`BackendError` (or a subclass) and nothing else.
        """
        if not isinstance(text, str) or not text.strip():
            raise BackendError(self.model_id, "the prompt is empty")
        if timeout <= 0:
            raise BackendTimeout(self.model_id, f"no time left (timeout {timeout:g} s)")
        try:
            output = self._generate(text.strip(), float(timeout), language)
        except BackendError:
            raise
        except Exception as exc:  # engines raise anything; callers get one typed error
            logger.warning("generation by %s failed", self.model_id, exc_info=True)
            raise BackendError(self.model_id, describe_exception(exc)) from exc
        if not isinstance(output, Output):
            raise BackendError(self.model_id, f"returned {type(output).__name__}, not an Output")
        if output.modality != self.modality:
            raise BackendError(
                self.model_id, f"made {output.modality}, the arena wants {self.modality}"
            )
        return output

    @abstractmethod
    def _generate(self, text: str, timeout: float, language: str | None) -> Output:
        """Engine-specific generation; may raise anything (wrapped by :meth:`generate`)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id}>"


def _has_type(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False  # YAML `true` is an int to Python; never accept it as a number
    if dict in types and isinstance(value, Mapping):
        return True
    return isinstance(value, types)


def _voices_problems(voices: Mapping[str, Any]) -> list[str]:
    if not voices:
        return ["option backend.voices must map at least one language to a voice"]
    bad = [
        f"{k!r}: {v!r}"
        for k, v in voices.items()
        if not (isinstance(k, str) and isinstance(v, str))
    ]
    return (
        [f"option backend.voices must map language codes to voice names; bad: {', '.join(bad)}"]
        if bad
        else []
    )


def lower_thread_priority(nice: int = GENERATION_NICE) -> None:
    """Give the calling thread (on Linux a thread has a niceness of its own) ``nice``.

    Threads and processes it starts inherit it. Where the system does not allow it, the
    thread keeps its priority: generation is slower to yield, never wrong.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (OSError, AttributeError) as exc:
        logger.debug("generation threads keep their priority: %s", exc)
