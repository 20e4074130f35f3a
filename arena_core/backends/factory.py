"""From registry entries to backends: the type -> class table, :func:`make_backend`, registry checks.

The table is built from a fixed tuple of classes (no registration side
effects at import), and importing it loads no engine: each backend imports its
engine library on first use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from arena_core.backends.base import Backend, BackendConfigError
from arena_core.backends.espeak import EspeakBackend
from arena_core.backends.hosted import (
    GradioSpaceBackend,
    HfInferenceBackend,
    OpenAICompatibleBackend,
)
from arena_core.backends.kokoro import KokoroBackend
from arena_core.backends.nanotts import PicoBackend
from arena_core.backends.openjtalk import OpenJTalkBackend
from arena_core.backends.piper import PiperBackend
from arena_core.backends.system import FestivalBackend, FliteBackend
from arena_core.registry import Model, Registry

#: Every backend class, in the order the docs list them.
_BACKEND_CLASSES: tuple[type[Backend], ...] = (
    EspeakBackend,
    PicoBackend,
    PiperBackend,
    FliteBackend,
    FestivalBackend,
    KokoroBackend,
    OpenJTalkBackend,
    HfInferenceBackend,
    GradioSpaceBackend,
    OpenAICompatibleBackend,
)

#: Registry ``backend.type`` -> class.
BACKEND_TYPES: Mapping[str, type[Backend]] = MappingProxyType(
    {cls.type_name: cls for cls in _BACKEND_CLASSES}
)


def backend_class(model: Model) -> type[Backend]:
    """The class for a model's ``backend.type``; unknown types name the model and the known types."""
    cls = BACKEND_TYPES.get(model.backend.type)
    if cls is None:
        known = ", ".join(BACKEND_TYPES)
        raise BackendConfigError(
            [f"model {model.id!r}: unknown backend type {model.backend.type!r} (known: {known})"]
        )
    return cls


def make_backend(model: Model, modality: str, env: Mapping[str, str] = os.environ) -> Backend:
    """Build the backend of one model of an arena of ``modality``; no I/O happens here.

    ``env`` supplies tokens (``HF_TOKEN`` ...) and, for program engines, ``PATH``.
    Raises :class:`BackendConfigError` for an unknown type or bad options.
    """
    return backend_class(model)(model, modality, env)


def registry_problems(registry: Registry) -> list[str]:
    """Every backend problem in a registry (unknown type, missing/unknown/mistyped option), one line each."""
    problems = []
    for arena in registry.arenas:
        for model in arena.models:
            try:
                cls = backend_class(model)
            except BackendConfigError as exc:
                problems.extend(f"arena {arena.id!r}: {p}" for p in exc.problems)
                continue
            problems.extend(
                f"arena {arena.id!r}: model {model.id!r}: {p}"
                for p in cls.option_problems(model.backend.options, arena.modality)
            )
    return problems


def check_registry(registry: Registry) -> None:
    """Refuse a registry whose backend blocks cannot work: raises :class:`BackendConfigError` listing all."""
    problems = registry_problems(registry)
    if problems:
        raise BackendConfigError(problems)
