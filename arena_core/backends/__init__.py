"""Model backends: generate an arena's outputs with local speech engines or hosted models.

Start with :func:`make_backend` (one model) or :meth:`ModelPool.from_arena`
(a whole arena, with cache, timeouts and outage pausing); refuse a bad
registry at start-up with :func:`check_registry`.
"""

from arena_core.backends.base import (
    Availability,
    Backend,
    BackendConfigError,
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    EngineBusy,
)
from arena_core.backends.cache import OutputCache
from arena_core.backends.factory import (
    BACKEND_TYPES,
    check_registry,
    make_backend,
    registry_problems,
)
from arena_core.backends.output import Output, OutputError
from arena_core.backends.pool import ModelPool, ModelStatus, PoolSettings, engine_workload

__all__ = [
    "BACKEND_TYPES",
    "Availability",
    "Backend",
    "BackendConfigError",
    "BackendError",
    "BackendTimeout",
    "BackendUnavailable",
    "EngineBusy",
    "ModelPool",
    "ModelStatus",
    "Output",
    "OutputCache",
    "OutputError",
    "PoolSettings",
    "check_registry",
    "engine_workload",
    "make_backend",
    "registry_problems",
]
