"""Assemble the running arena from settings: the one place the pieces are wired together."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from arena_core.backends import ModelPool, OutputCache, PoolSettings, check_registry
from arena_core.config import Settings
from arena_core.registry import load_registry
from arena_core.service import ArenaService
from arena_core.votes.log import VoteLog

log = logging.getLogger(__name__)


def build_service(settings: Settings, env: Mapping[str, str] = os.environ) -> ArenaService:
    """Load and check the registry, build the model pools and the vote log.

    A bad registry or backend block stops here with one clear error; models
    that cannot run on this machine are listed with their reason and never
    paired.
    """
    registry = load_registry(settings.registry)
    check_registry(registry)
    cache = OutputCache(settings.cache_dir, max_bytes=settings.cache_mb * 1024 * 1024)
    pool_settings = PoolSettings(timeout=settings.timeout)
    pools = {
        arena.id: ModelPool.from_arena(arena, env=env, cache=cache, settings=pool_settings)
        for arena in registry.arenas
    }
    for arena in registry.arenas:
        for model_id, status in pools[arena.id].status().items():
            if not status.available:
                log.warning("arena %s: %s unavailable: %s", arena.id, model_id, status.reason)
    service = ArenaService(
        registry,
        pools,
        VoteLog(settings.votes_dir),
        battle_ttl=settings.battle_ttl,
        rate_limit=settings.rate_limit,
        rate_window=settings.rate_window,
        max_prompt_chars=settings.max_prompt_chars,
    )
    return service
