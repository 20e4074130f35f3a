"""The registry: arenas, their models and prompts, the judges, and the priors' sources.

* :mod:`~arena_core.registry.loader` reads ``registry.yaml`` into frozen dataclasses,
  strictly (every key checked, the first problem reported as one :class:`RegistryError`);
* :mod:`~arena_core.registry.fields` holds the field readers every part shares;
* :mod:`~arena_core.registry.priors` reads a model's published prior and the arena's
  mapping onto the rating scale, with their sources;
* :mod:`~arena_core.registry.licences` says which stated licences count as open weights;
* :mod:`~arena_core.registry.check` is ``python -m arena_core registry --check``, which
  lists every problem of a file instead of stopping at the first.
"""

from arena_core.registry.fields import RegistryError
from arena_core.registry.loader import (
    MAX_WEIGHT,
    MODALITIES,
    Arena,
    BackendSpec,
    Model,
    Prompt,
    Registry,
    load_document,
    load_registry,
    parse_registry,
)

__all__ = [
    "MAX_WEIGHT",
    "MODALITIES",
    "Arena",
    "BackendSpec",
    "Model",
    "Prompt",
    "Registry",
    "RegistryError",
    "load_document",
    "load_registry",
    "parse_registry",
]
