"""Assemble the running arena from settings: the one place the pieces are wired together."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from huggingface_hub import HfApi

from arena_core.backends import ModelPool, OutputCache, PoolSettings, check_registry
from arena_core.dataset.hub import HubSync
from arena_core.registry import load_registry
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog, new_shard_name

log = logging.getLogger(__name__)


def build_service(settings: Settings, env: Mapping[str, str] = os.environ,
                  hf_api: HfApi | None = None) -> ArenaService:  # fmt: skip
    """Load and check the registry, build the model pools and the vote log.

    A bad registry or backend block stops here with one clear error; models
    that cannot run on this machine are listed with their reason and never
    paired. With ``ARENA_DATASET_REPO`` and ``HF_TOKEN`` set, the repo's votes
    are downloaded for the replay and new votes are pushed to it (``hf_api``
    is injected by tests; the real Hub is used otherwise).
    """
    registry = load_registry(settings.registry)
    check_registry(registry)
    log.info("voters are identified by %s", settings.identity.describe())
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
    sync, sources, lock, shard = None, [], None, new_shard_name()
    if settings.dataset_repo and (settings.hf_token or hf_api is not None):
        api = hf_api or HfApi(token=settings.hf_token)
        sync = HubSync(settings.dataset_repo, settings.data_dir, hf_api=api, every_minutes=settings.push_minutes,
                       license_id=settings.dataset_license, space_id=settings.space_id)  # fmt: skip
        sources.append(sync.pull())
        lock = sync.start_uploads(shard).lock
        try:
            sync.publish_card(registry)
        except Exception as exc:  # the card can wait for the next start; votes cannot
            log.error("could not update the dataset card: %s", exc)
    elif settings.dataset_repo:
        log.warning(
            "ARENA_DATASET_REPO is set but HF_TOKEN is not: votes stay in %s", settings.votes_dir
        )
    return ArenaService(
        registry,
        pools,
        VoteLog(settings.votes_dir, lock=lock, shard_name=shard),
        replay_sources=sources,
        sync=sync,
        battle_ttl=settings.battle_ttl,
        rate_limit=settings.rate_limit,
        rate_window=settings.rate_window,
        max_prompt_chars=settings.max_prompt_chars,
    )
