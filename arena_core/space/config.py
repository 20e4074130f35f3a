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
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from huggingface_hub.utils import HFValidationError, validate_repo_id

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
    voter_salt: str = field(default="", repr=False)  # a secret: never in a log line
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
    hf_token: str = field(default="", repr=False)  # a secret: never in a log line
    #: ARENA_PUSH_MINUTES: minutes between pushes of new votes to the Hub.
    push_minutes: float = 5.0
    #: ARENA_DATASET_LICENSE: licence written in the dataset card.
    dataset_license: str = "cc-by-4.0"
    #: SPACE_ID: set by Hugging Face Spaces; enables the login button.
    space_id: str = ""
    #: SPACE_HOST (set by Hugging Face Spaces: its hf.space name, then any custom domain)
    #: and ARENA_SITES (an operator's own names, e.g. behind a reverse proxy or for a site
    #: that embeds the page), comma-separated: the host names the arena's page is served
    #: under. Battles and votes sent by a page of any other site are refused
    #: (``identity.foreign_origin``); with no name given, the request's own ``Host`` is the
    #: arena's site.
    space_host: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()
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
    judge_token: str = field(default="", repr=False)  # a secret: never in a log line
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
        return IdentityRule(trusted_proxies=self.trusted_proxies, require_login=self.require_login,
                            sites=self.space_host + self.sites)  # fmt: skip

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        """Build settings from ``env``. An empty or blank variable counts as unset; a number
        that is malformed or outside its :data:`RANGES` raises :class:`ConfigError`."""
        salt = _text(env, "ARENA_VOTER_SALT", "")
        if not salt:
            salt = secrets.token_hex(16)
            log.warning("ARENA_VOTER_SALT is not set: voter hashes change at every restart, so "
                        "the rate limit and the anomalous-voter test start afresh each time")  # fmt: skip
        space_id = _text(env, "SPACE_ID", "")
        require_login = _switch(env, "ARENA_REQUIRE_LOGIN", cls.require_login)
        if require_login and not space_id:
            raise ConfigError("ARENA_REQUIRE_LOGIN needs Hugging Face sign-in, which only a Space "
                              "offers (SPACE_ID is not set): every vote would be refused")  # fmt: skip
        # Each judge once: "a,b,a" started judge a twice, judging every battle twice as often.
        judges = tuple(dict.fromkeys(
            j.strip() for j in _text(env, "ARENA_JUDGES", "").split(",") if j.strip()))  # fmt: skip
        judge_token = _text(env, "ARENA_JUDGE_TOKEN", "")
        if judges and not judge_token:
            raise ConfigError("ARENA_JUDGES needs ARENA_JUDGE_TOKEN: judges vote with it")
        return cls(
            judges=judges,
            judge_token=judge_token,
            judge_pause=_number(env, "ARENA_JUDGE_PAUSE", cls.judge_pause),
            registry=Path(_text(env, "ARENA_REGISTRY", str(cls.registry))),
            data_dir=Path(_text(env, "ARENA_DATA_DIR", str(cls.data_dir))),
            voter_salt=salt,
            rate_limit=_number(env, "ARENA_RATE_LIMIT", cls.rate_limit),
            rate_window=_number(env, "ARENA_RATE_WINDOW", cls.rate_window),
            battle_ttl=_number(env, "ARENA_BATTLE_TTL", cls.battle_ttl),
            timeout=_number(env, "ARENA_TIMEOUT", cls.timeout),
            max_prompt_chars=_number(env, "ARENA_MAX_PROMPT_CHARS", cls.max_prompt_chars),
            cache_mb=_number(env, "ARENA_CACHE_MB", cls.cache_mb),
            cache_memory_mb=_number(env, "ARENA_CACHE_MEMORY_MB", cls.cache_memory_mb),
            dataset_repo=_repo_id("ARENA_DATASET_REPO", _text(env, "ARENA_DATASET_REPO", "")),
            # A token holds no whitespace: one pasted with its newline failed every Hub call
            # in the background (huggingface_hub strips the variables it reads itself).
            hf_token=_text(env, "HF_TOKEN", "").strip(),
            push_minutes=_number(env, "ARENA_PUSH_MINUTES", cls.push_minutes),
            dataset_license=_text(env, "ARENA_DATASET_LICENSE", cls.dataset_license),
            space_id=space_id,
            space_host=_names(_text(env, "SPACE_HOST", "")),
            sites=_names(_text(env, "ARENA_SITES", "")),
            trusted_proxies=_number(env, "ARENA_TRUSTED_PROXIES", 1 if space_id else 0),
            require_login=require_login,
            listen_share=_number(env, "ARENA_LISTEN_SHARE", cls.listen_share),
            monitoring=_switch(env, "ARENA_MONITORING", cls.monitoring),
            analytics=_switch(env, "GRADIO_ANALYTICS_ENABLED", cls.analytics),
            temp_mb=_number(env, "ARENA_TEMP_MB", cls.temp_mb),
            clip_mb=_number(env, "ARENA_CLIP_MB", cls.clip_mb),
            audio_rate=_number(env, "ARENA_AUDIO_RATE", cls.audio_rate),
            loudness=_number(env, "ARENA_LOUDNESS", cls.loudness),
            warmup=_switch(env, "ARENA_WARMUP", cls.warmup),
            snapshot_every_hours=_number(
                env, "ARENA_SNAPSHOT_EVERY_HOURS", cls.snapshot_every_hours
            ),
        )


@dataclass(frozen=True)
class Range:
    """The values a number setting may take: ``kind`` (int or float) from ``low`` to
    ``high``; ``low`` itself refused when ``above_low`` (a period of 0 seconds)."""

    kind: type
    low: float
    high: float
    above_low: bool = False

    def __str__(self) -> str:
        what = "whole number" if self.kind is int else "number"
        low, high = _bound(self.low), _bound(self.high)
        if (self.above_low and self.low == 0) or (self.kind is int and self.low == 1):
            return f"a positive {what} at most {high}"
        above = "above" if self.above_low else "from"
        return f"a {what} {above} {low} to {high}"


def _bound(value: float) -> str:
    """A bound as the README writes it: every digit, in groups of three. ``:g`` kept six
    digits and went to exponents: ARENA_CACHE_MB's 1,048,576 read "1.04858e+06"."""
    return f"{int(value):,}" if value == int(value) else f"{value:,}"


#: The range of every number setting. Each is finite and bounded so that a typo (an extra
#: zero, ``inf``) stops the start with the variable's name instead of failing later, far
#: from it: a timeout beyond ``threading.TIMEOUT_MAX``, a period ``timedelta`` cannot hold,
#: a listening gate no vote can pass. The highs are generous: an hour for one generation,
#: a week for a battle, a TiB of disk, 16 proxies.
RANGES: Mapping[str, Range] = MappingProxyType({
    "ARENA_RATE_LIMIT": Range(int, 1, 1_000_000),
    "ARENA_RATE_WINDOW": Range(float, 0, 30 * 86_400, above_low=True),  # up to 30 days
    "ARENA_BATTLE_TTL": Range(float, 0, 7 * 86_400, above_low=True),  # up to a week
    "ARENA_TIMEOUT": Range(float, 0, 3600, above_low=True),  # up to an hour
    "ARENA_MAX_PROMPT_CHARS": Range(int, 1, 100_000),
    "ARENA_CACHE_MB": Range(int, 1, 1_048_576),  # up to 1 TiB
    "ARENA_CACHE_MEMORY_MB": Range(int, 0, 65_536),  # up to 64 GiB; 0: none
    "ARENA_PUSH_MINUTES": Range(float, 0, 7 * 1440, above_low=True),  # up to a week
    "ARENA_TRUSTED_PROXIES": Range(int, 0, 16),
    "ARENA_LISTEN_SHARE": Range(float, 0, 1),  # 1: both clips to the end; 0: no gate
    "ARENA_TEMP_MB": Range(int, 1, 1_048_576),
    "ARENA_CLIP_MB": Range(int, 1, 65_536),
    "ARENA_AUDIO_RATE": Range(int, 8000, 192_000),  # Hz, as arena_core.space.blinding takes
    # LUFS: with room for the peaks (12 dB of headroom under -1 dBFS, see space.blinding).
    "ARENA_LOUDNESS": Range(float, -40, -14),
    "ARENA_JUDGE_PAUSE": Range(float, 0, 86_400),  # up to a day
    "ARENA_SNAPSHOT_EVERY_HOURS": Range(float, 0, 8760),  # up to a year; 0: off
})  # fmt: skip


def _names(text: str) -> tuple[str, ...]:
    """Host names from a comma-separated list (blanks dropped)."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _text(env: Mapping[str, str], name: str, default: str) -> str:
    """A setting's text; empty or blank counts as unset, as for every other variable (an
    empty ``ARENA_DATA_DIR`` would otherwise put the votes in the current directory)."""
    raw = env.get(name)
    return default if raw is None or not raw.strip() else raw


def _number(env: Mapping[str, str], name: str, default):
    """A number setting within its :data:`RANGES`; unset or blank: ``default``."""
    bounds = RANGES[name]
    raw = _text(env, name, "")
    if not raw:
        return default
    text = raw.strip()
    # int() alone would take "²" or "1_0"; a whole number is ASCII digits with a sign.
    if bounds.kind is int and not (text.lstrip("+-").isascii() and text.lstrip("+-").isdigit()):
        raise ConfigError(f"{name} must be {bounds}, got {raw!r}")
    try:
        value = bounds.kind(text)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    low_ok = value > bounds.low if bounds.above_low else value >= bounds.low
    if not (low_ok and value <= bounds.high):  # NaN compares false: refused too
        raise ConfigError(f"{name} must be {bounds}, got {raw!r}")
    return value


def _repo_id(name: str, repo: str) -> str:
    """A Hub repo id (``my-org/arena-votes``), or "" when unset. One that can never name a
    repo (its URL pasted, a trailing newline) stopped nothing: every connection failed in
    the background and the votes stayed on the Space's disk, which a restart wipes."""
    if repo:
        try:
            validate_repo_id(repo)
        except HFValidationError as exc:
            raise ConfigError(f"{name}={repo!r} is not a Hub repo id such as my-org/arena-"
                              f"votes: {' '.join(str(exc).split())}") from None  # fmt: skip
    return repo


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _text(env, name, "")
    if not raw:
        return default
    if raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if raw.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not one of 1/0, true/false, yes/no, on/off")
