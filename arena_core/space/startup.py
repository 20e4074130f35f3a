"""Assemble the running arena from settings: the one place the pieces are wired together."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from datetime import datetime

from huggingface_hub import HfApi

from arena_core.backends import (
    ModelPool,
    OutputCache,
    PoolSettings,
    check_registry,
    engine_workload,
)
from arena_core.backends.pool import TIMEOUT_GRACE
from arena_core.dataset.audio import VOTE_COLUMNS, AudioPublisher, cache_lookup
from arena_core.dataset.hub import HubSync
from arena_core.judges.factory import make_judge
from arena_core.judges.runner import BackgroundJudges
from arena_core.registry import load_registry
from arena_core.snapshots.daily import DailySnapshots, SnapshotStore, hub_votes, local_votes
from arena_core.space.blinding import Blinder, BlindingParams
from arena_core.space.config import Settings
from arena_core.space.pacing import Pacer
from arena_core.space.service import MAX_DRAWS, ArenaService
from arena_core.space.warmup import Warmup
from arena_core.votes.log import VoteLog, new_shard_name
from arena_core.votes.read import read_votes

log = logging.getLogger(__name__)
#: Seconds beyond the draws' own wait before a battle's generation times reach the board: the
#: typed prompt's hold, and slack.
LATENCY_MARGIN = 120.0


def latency_delay(settings: Settings) -> float:
    """Seconds a generation's time stays off the board (``PoolSettings.latency_delay``): past
    the last moment its battle can take a vote. A time is recorded when its output is made;
    the battle opens after its pair's other output, which may come from a later draw (up to
    ``MAX_DRAWS`` of them, each waiting up to the timeout), and then lives ``battle_ttl``."""
    draws = MAX_DRAWS * (settings.timeout + TIMEOUT_GRACE)
    return settings.battle_ttl + draws + LATENCY_MARGIN


def build_service(settings: Settings, env: Mapping[str, str] = os.environ,
                  hf_api: HfApi | None = None,
                  vote_clock: Callable[[], datetime] | None = None) -> ArenaService:  # fmt: skip
    """Load and check the registry, build the model pools and the vote log.

    A bad registry or backend block stops here with one clear error; models
    that cannot run on this machine are listed with their reason and never
    paired. With ``ARENA_DATASET_REPO`` and ``HF_TOKEN`` set, the repo's votes
    are downloaded for the replay and new votes are pushed to it (``hf_api``
    is injected by tests; the real Hub is used otherwise; so is ``vote_clock``, the
    vote log's clock, which stamps each vote's ``ts``). A Hub that does
    not answer does not stop the start: votes go to the local log, and the
    download, the merge into the live boards and the pushes follow once it
    answers. Audio outputs are delivered blind; the set-prompt warm-up is built
    (``service.warmup``, None with ``ARENA_WARMUP=0``) and started by the caller,
    like the vote replay.
    """
    registry = load_registry(settings.registry)
    check_registry(registry)
    log.info("voters are identified by %s", settings.identity.describe())
    memory = settings.cache_memory_mb * 1024 * 1024
    cache = OutputCache(settings.cache_dir, max_bytes=settings.cache_mb * 1024 * 1024,
                        memory_bytes=memory)  # fmt: skip
    # A battle's generation times stay off the board until it can no longer take a vote.
    pool_settings = PoolSettings(timeout=settings.timeout, latency_delay=latency_delay(settings))
    # One for all arenas: the engines' locks are process-wide, and eSpeak NG speaks in several.
    workload = engine_workload(pool_settings)
    pools = {
        arena.id: ModelPool.from_arena(
            arena, env=env, cache=cache, settings=pool_settings, workload=workload
        )
        for arena in registry.arenas
    }
    for arena in registry.arenas:
        for model_id, status in pools[arena.id].status().items():
            if not status.available:
                log.warning("arena %s: %s unavailable: %s", arena.id, model_id, status.reason)
    start_remote_checks(pools)
    sync, sources, lock, shard = None, [], None, new_shard_name()
    if settings.dataset_repo and (settings.hf_token or hf_api is not None):
        api = hf_api or HfApi(token=settings.hf_token)
        sync = HubSync(settings.dataset_repo, settings.data_dir, hf_api=api, every_minutes=settings.push_minutes,
                       license_id=settings.dataset_license, space_id=settings.space_id)  # fmt: skip
        sources.append(sync.hub_votes)
        lock = sync.lock
    elif settings.dataset_repo:
        log.warning(
            "ARENA_DATASET_REPO is set but HF_TOKEN is not: votes stay in %s", settings.votes_dir
        )
    blinder = Blinder(BlindingParams(sample_rate=settings.audio_rate, loudness=settings.loudness),
                      cache=OutputCache(settings.shaped_dir, max_bytes=settings.cache_mb * 1024 * 1024,
                                        memory_bytes=memory))  # fmt: skip
    pacer = Pacer()
    warmup = Warmup(registry, pools, blinder, pacer) if settings.warmup else None
    service = ArenaService(
        registry,
        pools,
        VoteLog(settings.votes_dir, lock=lock, shard_name=shard, clock=vote_clock),
        replay_sources=sources,
        sync=sync,
        battle_ttl=settings.battle_ttl,
        rate_limit=settings.rate_limit,
        rate_window=settings.rate_window,
        max_prompt_chars=settings.max_prompt_chars,
        listen_share=settings.listen_share,
        blinder=blinder,
        pacer=pacer,
        warmup=warmup,
        judge_token=settings.judge_token or None,
    )
    if sync is not None:  # a Hub that does not answer yet is retried in the background
        sync.start(service.vote_log, registry=registry, on_download=service.reload)
    return service


def start_judges(service: ArenaService, settings: Settings,
                 env: Mapping[str, str] = os.environ) -> BackgroundJudges | None:  # fmt: skip
    """Start the judges ``ARENA_JUDGES`` names, in one background thread (None if none).

    A judge that cannot be built here (an unknown id, a missing package or token) is
    logged and left out: the Space serves its visitors whatever its judges can do.
    """
    judges = []
    for judge_id in settings.judges:
        try:
            judges.append(make_judge(service.registry.judge(judge_id), env))
        except (KeyError, ValueError, ImportError, RuntimeError) as exc:
            log.error("judge %s not started: %s", judge_id, exc)
    if not judges:
        return None
    background = BackgroundJudges(service, judges, settings.judge_token, settings.judge_pause)
    background.start()
    log.info("judges running: %s", ", ".join(j.id for j in judges))
    return background


def start_snapshots(service: ArenaService, settings: Settings,
                    clock=None) -> DailySnapshots | None:  # fmt: skip
    """Start the daily snapshots of every board (None with ``ARENA_SNAPSHOT_EVERY_HOURS=0``).

    With the Hub they are computed from the dataset's commit of this Space's votes and
    committed to it; without it, from the local vote folder. Either way a copy goes to
    ``<data>/leaderboards/``. ``clock`` (current UTC datetime) is injected by tests.
    """
    if not settings.snapshot_every_hours:
        return None
    sync = service.sync
    source = hub_votes(sync) if sync is not None else local_votes([settings.votes_dir])

    kwargs = {"clock": clock} if clock is not None else {}
    snapshots = DailySnapshots(service.registry, service.params, source=source,
                               store=SnapshotStore(settings.data_dir, sync),
                               unavailable=service.unavailable, every_hours=settings.snapshot_every_hours,
                               **kwargs)  # fmt: skip
    snapshots.start()
    return snapshots


def start_audio_publisher(service: ArenaService, settings: Settings) -> AudioPublisher | None:
    """Start publishing the dataset's audio config (None without the Hub): the set prompts'
    outputs used in battles, from the output cache (read through an instance of its own on
    the same folder), through the service's Hub sync."""
    if service.sync is None:
        return None
    folders = [service.vote_log.folder, *service.replay_sources]
    cache = OutputCache(settings.cache_dir, max_bytes=settings.cache_mb * 1024 * 1024)
    publisher = AudioPublisher(service.sync, lambda: read_votes(folders, columns=list(VOTE_COLUMNS)),
                               cache_lookup(service.pools, cache), settings.data_dir / "audio")  # fmt: skip
    publisher.start()
    return publisher


def start_remote_checks(pools: Mapping[str, ModelPool]) -> None:
    """Call each available hosted model once on a short prompt, in the background.

    Until its call succeeds a hosted model is not paired; one that fails is
    paused with the failure as its reason (shown on the About tab) and checked
    again when the pause ends, so no battle is spent on a service that is down.
    """
    for arena_id, pool in pools.items():
        for model_id in pool.probe_remote():
            log.info("arena %s: checking %s before its first battle", arena_id, model_id)
