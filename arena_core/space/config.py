"""Settings, read from the environment in this one place.

Every knob the Space has is an environment variable documented in the README;
nothing else in the code reads ``os.environ`` for configuration (backends get
the environment passed in, for their API tokens).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from arena_core.integrity.identity import IdentityRule

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """An environment variable with a value we cannot use."""


@dataclass(frozen=True)
class Settings:
    #: ARENA_REGISTRY: the registry file.
    registry: Path = Path("registry.yaml")
    #: ARENA_DATA_DIR: local folder for the vote shards (``votes/``) and output cache (``cache/``).
    data_dir: Path = Path("data")
    #: ARENA_VOTER_SALT: secret mixed into voter hashes (random per process when unset).
    voter_salt: str = ""
    #: ARENA_RATE_LIMIT / ARENA_RATE_WINDOW: votes one voter may cast per window (seconds)
    #: before further votes are written flagged and left out of the ratings.
    rate_limit: int = 30
    rate_window: float = 600.0
    #: ARENA_BATTLE_TTL: seconds a battle stays open for its vote.
    battle_ttl: float = 1800.0
    #: ARENA_TIMEOUT: seconds one model may take to generate.
    timeout: float = 30.0
    #: ARENA_MAX_PROMPT_CHARS: longest prompt a visitor may type.
    max_prompt_chars: int = 500
    #: ARENA_CACHE_MB: size bound of the output cache.
    cache_mb: int = 1024
    #: ARENA_CACHE_MEMORY_MB: outputs, and clips shaped for delivery, kept in memory too
    #: (each of the two caches up to this much), so set-prompt battles read no file.
    cache_memory_mb: int = 256
    #: ARENA_DATASET_REPO and HF_TOKEN: the Hub dataset the votes sync to (empty: local only).
    dataset_repo: str = ""
    hf_token: str = ""
    #: ARENA_PUSH_MINUTES: minutes between pushes of new votes to the Hub.
    push_minutes: float = 5.0
    #: ARENA_DATASET_LICENSE: licence written in the dataset card.
    dataset_license: str = "cc-by-4.0"
    #: SPACE_ID: set by Hugging Face Spaces; enables the login button.
    space_id: str = ""
    #: ARENA_LISTEN_SHARE: the listening gate. A vote on an audio battle is refused until
    #: this share of the two clips' total duration has passed since delivery. 0.5 admits
    #: a visitor who plays both at double speed (the player offers it), or side by side.
    listen_share: float = 0.5
    #: ARENA_MONITORING: serve Gradio's /monitoring page (function names, success rates).
    monitoring: bool = False
    #: GRADIO_ANALYTICS_ENABLED: Gradio's usage reports (off unless the operator asks).
    analytics: bool = False
    #: ARENA_TEMP_MB: size bound of Gradio's folder of served files (images of battles, other
    #: files Gradio writes; the audio is in memory, see clip_mb).
    temp_mb: int = 512
    #: ARENA_CLIP_MB: memory bound of the battles' audio clips (space/clips.py), oldest first.
    clip_mb: int = 256
    #: ARENA_AUDIO_RATE: the one sample rate (Hz) every clip of a speech battle is delivered at.
    audio_rate: int = 24_000
    #: ARENA_LOUDNESS: ITU-R BS.1770 loudness (LUFS) every clip is normalised to.
    loudness: float = -23.0
    #: ARENA_WARMUP: pre-generate the speech arenas' set prompts at start-up ("0" turns it off).
    warmup: bool = True
    #: ARENA_TRUSTED_PROXIES: proxies in front of the app that append the client address to
    #: X-Forwarded-For; the voter address is that many entries from the right (0: the socket
    #: peer). Default 1 on a Space (SPACE_ID set), 0 elsewhere.
    trusted_proxies: int = 0
    #: ARENA_REQUIRE_LOGIN: refuse votes from visitors not signed in with Hugging Face.
    require_login: bool = False
    #: ARENA_JUDGE_TOKEN: the secret a judge's votes carry (empty: no judge votes taken).
    judge_token: str = ""
    #: ARENA_JUDGES: ids of registry judges the Space runs in the background, comma-separated
    #: (empty: none). They need ARENA_JUDGE_TOKEN.
    judges: tuple[str, ...] = ()
    #: ARENA_JUDGE_PAUSE: seconds a background judge waits between battles, so judging
    #: never competes with visitors for the CPU for long.
    judge_pause: float = 20.0
    #: ARENA_SNAPSHOT_EVERY_HOURS: hours between snapshots of every board, written to
    #: ``leaderboards/<arena>/<date>.json`` in the dataset (and the data folder); one file per
    #: arena and UTC date. 0 turns them off.
    snapshot_every_hours: float = 24.0

    @property
    def votes_dir(self) -> Path:
        return self.data_dir / "votes"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def shaped_dir(self) -> Path:
        """Clips shaped for blind delivery (``arena_core.space.blinding``), cached like outputs."""
        return self.data_dir / "shaped"

    @property
    def identity(self) -> IdentityRule:
        """How voters are identified (see ``arena_core.integrity.identity``)."""
        return IdentityRule(trusted_proxies=self.trusted_proxies, require_login=self.require_login)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        """Build settings from ``env``; a malformed number raises :class:`ConfigError`."""
        salt = env.get("ARENA_VOTER_SALT", "")
        if not salt:
            salt = secrets.token_hex(16)
            log.warning("ARENA_VOTER_SALT is not set: voter hashes change at every restart, so "
                        "the rate limit and the anomalous-voter test start afresh each time")  # fmt: skip
        space_id = env.get("SPACE_ID", "")
        require_login = _switch(env, "ARENA_REQUIRE_LOGIN", cls.require_login)
        if require_login and not space_id:
            raise ConfigError("ARENA_REQUIRE_LOGIN needs Hugging Face sign-in, which only a Space "
                              "offers (SPACE_ID is not set): every vote would be refused")  # fmt: skip
        judges = tuple(j.strip() for j in env.get("ARENA_JUDGES", "").split(",") if j.strip())
        judge_token = env.get("ARENA_JUDGE_TOKEN", "")
        if judges and not judge_token:
            raise ConfigError("ARENA_JUDGES needs ARENA_JUDGE_TOKEN: judges vote with it")
        return cls(
            judges=judges,
            judge_token=judge_token,
            judge_pause=_number(env, "ARENA_JUDGE_PAUSE", cls.judge_pause, float, zero=True),
            registry=Path(env.get("ARENA_REGISTRY", cls.registry)),
            data_dir=Path(env.get("ARENA_DATA_DIR", cls.data_dir)),
            voter_salt=salt,
            rate_limit=_number(env, "ARENA_RATE_LIMIT", cls.rate_limit, int),
            rate_window=_number(env, "ARENA_RATE_WINDOW", cls.rate_window, float),
            battle_ttl=_number(env, "ARENA_BATTLE_TTL", cls.battle_ttl, float),
            timeout=_number(env, "ARENA_TIMEOUT", cls.timeout, float),
            max_prompt_chars=_number(env, "ARENA_MAX_PROMPT_CHARS", cls.max_prompt_chars, int),
            cache_mb=_number(env, "ARENA_CACHE_MB", cls.cache_mb, int),
            cache_memory_mb=_count(env, "ARENA_CACHE_MEMORY_MB", cls.cache_memory_mb),
            dataset_repo=env.get("ARENA_DATASET_REPO", ""),
            hf_token=env.get("HF_TOKEN", ""),
            push_minutes=_number(env, "ARENA_PUSH_MINUTES", cls.push_minutes, float),
            dataset_license=env.get("ARENA_DATASET_LICENSE", cls.dataset_license),
            space_id=space_id,
            trusted_proxies=_count(env, "ARENA_TRUSTED_PROXIES", 1 if space_id else 0),
            require_login=require_login,
            listen_share=_number(env, "ARENA_LISTEN_SHARE", cls.listen_share, float, zero=True),
            monitoring=_switch(env, "ARENA_MONITORING", cls.monitoring),
            analytics=_switch(env, "GRADIO_ANALYTICS_ENABLED", cls.analytics),
            temp_mb=_number(env, "ARENA_TEMP_MB", cls.temp_mb, int),
            clip_mb=_number(env, "ARENA_CLIP_MB", cls.clip_mb, int),
            audio_rate=_number(env, "ARENA_AUDIO_RATE", cls.audio_rate, int),
            loudness=_loudness(env, "ARENA_LOUDNESS", cls.loudness),
            warmup=_switch(env, "ARENA_WARMUP", cls.warmup),
            snapshot_every_hours=_number(
                env, "ARENA_SNAPSHOT_EVERY_HOURS", cls.snapshot_every_hours, float, zero=True
            ),
        )


def _number(env: Mapping[str, str], name: str, default, kind, *, zero: bool = False):
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a {kind.__name__}") from None
    if not (value >= 0 if zero else value > 0):  # NaN compares false: refused too
        raise ConfigError(f"{name} must be {'>= 0' if zero else 'positive'}, got {raw!r}")
    return value


def _loudness(env: Mapping[str, str], name: str, default: float) -> float:
    """A loudness in LUFS: negative, unlike the other numbers, and with room for the peaks
    (12 dB of headroom under -1 dBFS, see ``arena_core.space.blinding``)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if not -40.0 <= value <= -14.0:
        raise ConfigError(f"{name} must be within -40..-14 LUFS, got {raw!r}")
    return value


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if raw.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not one of 1/0, true/false, yes/no, on/off")


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number >= 0 (``_number`` refuses 0, which is meaningful here)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.strip().isascii() and raw.strip().isdigit()):
        raise ConfigError(f"{name} must be a whole number >= 0, got {raw!r}")
    return int(raw)
