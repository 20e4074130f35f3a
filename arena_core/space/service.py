"""The arena as the Space runs it: battles, votes, reveals and boards, without any UI.

:class:`ArenaService` ties the registry, the model pools, the battle record,
the vote log and the live ratings together. The Gradio app only translates
between it and components, so every rule here is tested without a browser.

A battle's models never leave this module before the vote: :class:`BattleView`
carries the prompt and two anonymous outputs, and the visitor holds only the
opaque handle.
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from arena_core.backends import BackendError, ModelPool, Output
from arena_core.leaderboard import Board, BoardParams
from arena_core.matchmaking import NoPairError
from arena_core.ratings.elo import EloStep
from arena_core.registry import Arena, Registry
from arena_core.space.battles import BattleBook, BattleError
from arena_core.space.live import LiveArena
from arena_core.space.pairing import Pairing
from arena_core.space.voters import RateLimiter
from arena_core.votes.log import VoteLog, VoteWriteError
from arena_core.votes.read import read_votes, vote_files
from arena_core.votes.schema import VOTES, Vote

log = logging.getLogger(__name__)

#: Pairs drawn for one battle before giving up when models keep failing.
MAX_DRAWS = 4
#: Flag written on votes over the rate limit (kept in the log, left out of ratings).
RATE_LIMITED = "rate_limited"
#: Characters allowed from Unicode's "format" class: joiners some scripts need.
_KEPT_FORMAT = {"\u200c", "\u200d"}


class ArenaError(ValueError):
    """A request the arena refuses; the message is written for the visitor."""


@dataclass(frozen=True)
class BattleView:
    """What the visitor may see of a battle before voting."""

    handle: str
    arena: str
    modality: str
    prompt: str
    category: str | None
    output_a: Output
    output_b: Output


@dataclass(frozen=True)
class Side:
    model_id: str
    name: str
    before: float | None
    after: float | None


@dataclass(frozen=True)
class Reveal:
    """The result shown after a vote."""

    vote: str
    a: Side
    b: Side
    counted: bool
    note: str = ""


@dataclass
class LoadProgress:
    """Start-up replay status, for the page to show instead of a blank board."""

    done: bool = False
    files: int = 0
    votes_used: dict[str, int] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    seconds: float | None = None
    error: str | None = None


def clean_prompt(text: str, max_chars: int) -> str:
    """A typed prompt made safe: controls removed, whitespace collapsed, length bounded."""
    kept = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind == "Cc" or ch in "\u2028\u2029":
            kept.append(" " if ch.isspace() else "")
        elif kind != "Cf" or ch in _KEPT_FORMAT:
            kept.append(ch)
    cleaned = " ".join("".join(kept).split())
    if not cleaned:
        raise ArenaError("The prompt is empty once control characters and spaces are removed.")
    if len(cleaned) > max_chars:
        raise ArenaError(f"The prompt is {len(cleaned)} characters long; the limit is {max_chars}.")
    return cleaned


class ArenaService:
    """Battles, votes and boards of every arena of a registry.

    Parameters
    ----------
    registry : Registry
    pools : dict of arena id to ModelPool
    log : VoteLog
        Where votes are written; its lock also orders rating updates.
    replay_sources : list of paths
        More vote folders to replay at start-up (the Hub download); duplicates
        of local votes are dropped by ``vote_id``.
    sync : HubSync, optional
        The Hub sync, for its status.
    battle_ttl, rate_limit, rate_window, max_prompt_chars : settings (see ``config.Settings``)
    params : BoardParams
        Board settings; the defaults are the CLI's, so both print the same boards.
    clock, rng : injected for tests.
    """

    def __init__(self, registry: Registry, pools: dict[str, ModelPool], vote_log: VoteLog, *,
                 replay_sources: list | None = None, sync=None, battle_ttl: float = 1800.0, rate_limit: int = 30, rate_window: float = 600.0,
                 max_prompt_chars: int = 500, params: BoardParams | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 rng: np.random.Generator | None = None):  # fmt: skip
        self.registry = registry
        self.pools = pools
        self.vote_log = vote_log
        self.replay_sources = list(replay_sources or [])
        self.sync = sync
        self.max_prompt_chars = max_prompt_chars
        self.params = params or BoardParams()
        self.live = {a.id: LiveArena(a, self.params) for a in registry.arenas}
        self.pairing = {a.id: Pairing(self.live[a.id], a) for a in registry.arenas}
        self.book = BattleBook(battle_ttl, clock)
        self.limiter = RateLimiter(rate_limit, rate_window, clock)
        self.progress = LoadProgress()
        self._rng = rng if rng is not None else np.random.default_rng()
        self._rng_lock = threading.Lock()
        self._pending: list[Vote] = []

    # -- start-up ---------------------------------------------------------------------

    def load(self) -> LoadProgress:
        """Replay the votes already in the log folder (all shards but this process's own)."""
        start = time.perf_counter()
        try:
            own = [p for p, _ in vote_files(self.vote_log.folder) if p != self.vote_log.path]
            files = own + [p for source in self.replay_sources for p, _ in vote_files(source)]
            votes = read_votes(files)
            used = {arena_id: live.replay(votes) for arena_id, live in self.live.items()}
            if len(votes):
                self.vote_log.advance_to(int(votes.ts_us.max()))
        except Exception as exc:  # the app must come up, showing what went wrong
            log.exception("vote replay failed")
            self.progress.error = f"{type(exc).__name__}: {exc}"
            files, used, votes = [], {}, None
        with self.vote_log.lock:  # votes cast during the replay were queued: apply them now
            for vote in self._pending:
                self.live[vote.arena].apply(vote)
            self._pending.clear()
            self.progress.files = len(files)
            self.progress.votes_used = used
            self.progress.skipped = Counter(votes.skipped) if votes is not None else Counter()
            self.progress.seconds = time.perf_counter() - start
            self.progress.done = True
        log.info("replayed %d vote files in %.2f s: used %s, skipped %s", len(files),
                 self.progress.seconds, used, dict(self.progress.skipped))  # fmt: skip
        return self.progress

    def start_loading(self) -> threading.Thread:
        """Replay in the background so visitors can battle while it runs."""
        thread = threading.Thread(target=self.load, name="vote-replay", daemon=True)
        thread.start()
        return thread

    # -- battles ----------------------------------------------------------------------

    def arena(self, arena_id: str) -> Arena:
        try:
            return self.registry.arena(arena_id)
        except KeyError:
            raise ArenaError(f"There is no arena {arena_id!r}.") from None

    def new_battle(self, arena_id: str, prompt: str | None = None) -> BattleView:
        """Draw two models, generate both outputs concurrently, and open the battle.

        ``prompt`` None or empty takes a random prompt of the arena's set; a
        typed prompt equal to one of the set counts as that prompt. A model
        that fails or times out is left out and the pair redrawn: it does not
        lose the battle.
        """
        arena = self.arena(arena_id)
        text, prompt_id, category = self._prompt(arena, prompt)
        pool, live = self.pools[arena.id], self.live[arena.id]
        failed: set[str] = set()
        for _ in range(MAX_DRAWS):
            candidates = [live.index[m] for m in pool.pairable(category) if m not in failed]
            try:
                with self._rng_lock:
                    a, b = self.pairing[arena.id].draw(candidates, category, self._rng)
            except NoPairError:
                break
            ids = (live.entrants[a].id, live.entrants[b].id)
            outputs = pool.generate_pair(*ids, text, category)
            errors = [
                (m, o) for m, o in zip(ids, outputs, strict=True) if isinstance(o, BackendError)
            ]
            if not errors:
                return self._open(arena, ids, outputs, text, prompt_id, category)
            for model_id, error in errors:
                log.warning(
                    "arena %s: %s failed (%s); redrawing the battle", arena.id, model_id, error
                )
                failed.add(model_id)
        raise ArenaError(
            "Not enough models are answering in this arena right now. Try again in a minute."
        )

    def _open(self, arena, ids, outputs, text, prompt_id, category) -> BattleView:
        handle, _ = self.book.open(arena=arena.id, model_a=ids[0], model_b=ids[1], prompt=text,
                                   prompt_id=prompt_id, category=category)  # fmt: skip
        self.book.delivered(handle)
        return BattleView(handle, arena.id, arena.modality, text, category, *outputs)

    def _prompt(self, arena: Arena, prompt: str | None) -> tuple[str, str | None, str | None]:
        if prompt is None or prompt == "":
            with self._rng_lock:
                chosen = arena.prompts[int(self._rng.integers(len(arena.prompts)))]
            return chosen.text, chosen.id, chosen.category
        text = clean_prompt(prompt, self.max_prompt_chars)
        for known in arena.prompts:
            if known.text == text:
                return known.text, known.id, known.category
        return text, None, None

    # -- votes ------------------------------------------------------------------------

    def vote(self, handle: str | None, choice: str, voter: str) -> Reveal:
        """Record the visitor's vote on their battle and reveal the models.

        Refused with a message, and nothing written: an unknown or expired
        battle, a second vote, a vote before both outputs arrived, a choice
        other than a, b, tie or both_bad. Over the rate limit, the vote is
        written flagged and left out of the ratings.
        """
        if choice not in VOTES:
            raise ArenaError(f"A vote is one of {', '.join(VOTES)}.")
        try:
            battle = self.book.close_for_vote(handle)
        except BattleError as exc:
            raise ArenaError(str(exc)) from None
        flags = () if self.limiter.allow(voter) else (RATE_LIMITED,)
        try:
            vote, step = self.vote_log.append(
                arena=battle.arena, model_a=battle.model_a, model_b=battle.model_b, vote=choice,
                battle_id=battle.battle_id, prompt_id=battle.prompt_id, prompt=battle.prompt,
                category=battle.category, voter=voter, voter_kind="human", flags=flags,
                then=self._apply,
            )  # fmt: skip
        except VoteWriteError as exc:
            log.error("vote on battle %s not saved: %s", battle.battle_id, exc)
            if exc.rolled_back:  # nothing reached the log: the visitor may vote again
                self.book.reopen(handle)
                raise ArenaError("Your vote could not be saved. Please vote again.") from None
            raise ArenaError("Your vote may not have been saved; this battle is closed.") from None
        return self._reveal(vote, step)

    def _apply(self, vote: Vote) -> tuple[Vote, EloStep | None]:
        """Runs under the log's lock, right after the vote is on disk."""
        if not self.progress.done:
            self._pending.append(vote)
            return vote, None
        return vote, self.live[vote.arena].apply(vote)

    def _reveal(self, vote: Vote, step: EloStep | None) -> Reveal:
        arena = self.registry.arena(vote.arena)
        a, b = arena.model(vote.model_a), arena.model(vote.model_b)
        if step is None:
            note = ("This vote was over the rate limit: it is kept but not counted."
                    if vote.flags else "Ratings are still loading; your vote is saved and will count.")  # fmt: skip
            return Reveal(vote.vote, Side(a.id, a.name, None, None), Side(b.id, b.name, None, None),
                          counted=False, note=note)  # fmt: skip
        return Reveal(
            vote.vote,
            Side(a.id, a.name, step.before_a, step.after_a),
            Side(b.id, b.name, step.before_b, step.after_b),
            counted=True,
        )

    # -- boards -----------------------------------------------------------------------

    def board(self, arena_id: str, category: str | None = None) -> Board:
        self.arena(arena_id)
        live = self.live[arena_id]
        if category is not None and category not in live.categories:
            raise ArenaError(f"Arena {arena_id!r} has no category {category!r}.")
        return live.board(category, skipped=self.progress.skipped)

    def model_status(self) -> dict[str, str]:
        """``"<arena>/<model>"``: "available", "paused", or why the model cannot run here."""
        out = {}
        for arena_id, pool in self.pools.items():
            for model_id, status in pool.status().items():
                out[f"{arena_id}/{model_id}"] = status.state if status.available else status.reason
        return out

    def latency(self, arena_id: str) -> dict[str, float | None]:
        """Median generation seconds per model (uncached generations since start-up)."""
        pool = self.pools[arena_id]
        return {m.id: pool.median_latency(m.id) for m in self.arena(arena_id).models}

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        self.vote_log.close()
