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
    #: ARENA_DATASET_REPO and HF_TOKEN: the Hub dataset the votes sync to (empty: local only).
    dataset_repo: str = ""
    hf_token: str = ""
    #: ARENA_PUSH_MINUTES: minutes between pushes of new votes to the Hub.
    push_minutes: float = 5.0
    #: ARENA_DATASET_LICENSE: licence written in the dataset card.
    dataset_license: str = "cc-by-4.0"
    #: SPACE_ID: set by Hugging Face Spaces; enables the login button.
    space_id: str = ""
    #: ARENA_TRUSTED_PROXIES: proxies in front of the app that append the client address to
    #: X-Forwarded-For; the voter address is that many entries from the right (0: the socket
    #: peer). Default 1 on a Space (SPACE_ID set), 0 elsewhere.
    trusted_proxies: int = 0
    #: ARENA_REQUIRE_LOGIN: refuse votes from visitors not signed in with Hugging Face.
    require_login: bool = False

    @property
    def votes_dir(self) -> Path:
        return self.data_dir / "votes"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

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
        require_login = _flag(env, "ARENA_REQUIRE_LOGIN")
        if require_login and not space_id:
            raise ConfigError("ARENA_REQUIRE_LOGIN needs Hugging Face sign-in, which only a Space "
                              "offers (SPACE_ID is not set): every vote would be refused")  # fmt: skip
        return cls(
            registry=Path(env.get("ARENA_REGISTRY", cls.registry)),
            data_dir=Path(env.get("ARENA_DATA_DIR", cls.data_dir)),
            voter_salt=salt,
            rate_limit=_number(env, "ARENA_RATE_LIMIT", cls.rate_limit, int),
            rate_window=_number(env, "ARENA_RATE_WINDOW", cls.rate_window, float),
            battle_ttl=_number(env, "ARENA_BATTLE_TTL", cls.battle_ttl, float),
            timeout=_number(env, "ARENA_TIMEOUT", cls.timeout, float),
            max_prompt_chars=_number(env, "ARENA_MAX_PROMPT_CHARS", cls.max_prompt_chars, int),
            cache_mb=_number(env, "ARENA_CACHE_MB", cls.cache_mb, int),
            dataset_repo=env.get("ARENA_DATASET_REPO", ""),
            hf_token=env.get("HF_TOKEN", ""),
            push_minutes=_number(env, "ARENA_PUSH_MINUTES", cls.push_minutes, float),
            dataset_license=env.get("ARENA_DATASET_LICENSE", cls.dataset_license),
            space_id=space_id,
            trusted_proxies=_count(env, "ARENA_TRUSTED_PROXIES", 1 if space_id else 0),
            require_login=require_login,
        )


def _number(env: Mapping[str, str], name: str, default, kind):
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a {kind.__name__}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number >= 0 (``_number`` refuses 0, which is meaningful here)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.strip().isascii() and raw.strip().isdigit()):
        raise ConfigError(f"{name} must be a whole number >= 0, got {raw!r}")
    return int(raw)


#: Accepted spellings of an on/off environment variable.
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw not in _TRUE + _FALSE:
        raise ConfigError(f"{name} must be one of {', '.join(_TRUE + _FALSE[1:])}, got {raw!r}")
    return raw in _TRUE
