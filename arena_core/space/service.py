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
from collections.abc import Callable
from datetime import datetime

import numpy as np

from arena_core.backends import BackendError, EngineBusy, ModelPool
from arena_core.integrity.detector import AnomalyDetector
from arena_core.integrity.limiter import RateLimiter
from arena_core.leaderboard import Board, BoardParams
from arena_core.matchmaking import NoPairError
from arena_core.registry import Arena, Registry
from arena_core.space.analyses import Analyses
from arena_core.space.battles import BattleBook
from arena_core.space.blinding import Blinder
from arena_core.space.judging import JudgeDesk
from arena_core.space.live import LiveArena
from arena_core.space.pacing import Pacer
from arena_core.space.pairing import Pairing
from arena_core.space.replay import VoteReplay
from arena_core.space.sessions import SessionCounter, clip_lengths
from arena_core.space.style import battle_style
from arena_core.space.views import (  # the page imports these from here
    ArenaError,
    BattleView,
    LoadProgress,
    Reveal,
    Side,
    clean_prompt,
)
from arena_core.space.voting import VoteDesk
from arena_core.votes.log import VoteLog
from arena_core.votes.schema import Vote
from arena_core.window import ALL_TIME, Window

__all__ = ["ArenaError", "ArenaService", "BattleView", "LoadProgress", "Reveal", "Side",
           "clean_prompt"]  # fmt: skip

log = logging.getLogger(__name__)

#: Pairs drawn for one battle before giving up when models keep failing.
MAX_DRAWS = 4


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
    battle_ttl, rate_limit, rate_window, max_prompt_chars, listen_share : settings
        (see ``config.Settings``)
    params : BoardParams
        Board settings; the defaults are the CLI's, so both print the same boards.
    blinder, pacer, warmup : optional
        Blind delivery of audio outputs, the hold that hides generation time, and
        the start-up pre-generation (``arena_core.space.blinding``, ``pacing``,
        ``warmup``); without them outputs leave as the engines made them.
    judge_token : str, optional
        ``ARENA_JUDGE_TOKEN``: the secret a judge's votes must carry (``judging.py``).
    clock, rng : injected for tests.
    wall_clock : callable returning the current UTC datetime; ages the log's recent votes
        when the rate limiter is restored at start-up (injected for tests).
    """

    def __init__(self, registry: Registry, pools: dict[str, ModelPool], vote_log: VoteLog, *,
                 replay_sources: list | None = None, sync=None, battle_ttl: float = 1800.0, rate_limit: int = 30, rate_window: float = 600.0,
                 max_prompt_chars: int = 500, listen_share: float = 0.0,
                 params: BoardParams | None = None,
                 blinder: Blinder | None = None, pacer: Pacer | None = None, warmup=None,
                 judge_token: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 rng: np.random.Generator | None = None,
                 wall_clock: Callable[[], datetime] | None = None):  # fmt: skip
        self.registry = registry
        self.pools = pools
        self.vote_log = vote_log
        self.replay_sources = list(replay_sources or [])
        self.sync = sync
        self.max_prompt_chars = max_prompt_chars
        self.listen_share = listen_share
        self.params = params or BoardParams()
        self.live = {a.id: LiveArena(a, self.params) for a in registry.arenas}
        self.pairing = {a.id: Pairing(self.live[a.id], a) for a in registry.arenas}
        self.book = BattleBook(battle_ttl, clock)
        self.limiter = RateLimiter(rate_limit, rate_window, clock)
        self.sessions = SessionCounter(clock=clock)
        #: The start-up replay, the replays after it and each vote's live update (replay.py).
        self.replay = VoteReplay(self.live, vote_log, self.replay_sources, self.limiter,
                                 self.sessions, sync=sync, wall_clock=wall_clock)  # fmt: skip
        self.progress, self.rebuilds = self.replay.progress, self.replay.rebuilds
        self._rng = rng if rng is not None else np.random.default_rng()
        self._rng_lock = threading.Lock()
        self._drawable: dict[
            str, tuple
        ] = {}  # arena id: (its set prompts, categories) that can pair
        self.blinder, self.pacer, self.warmup = blinder, pacer, warmup
        self.analyses = Analyses(registry, lambda: [vote_log.folder, *self.replay_sources])
        self.judges = JudgeDesk(registry, self.book, vote_log, self._version, self.replay.apply,
                                judge_token)  # fmt: skip
        self.desk = VoteDesk(registry, self.book, vote_log, self.limiter, self.sessions,
                             is_flagged=lambda voter: self.detector.is_flagged(voter),
                             versions=self._version, apply=self.replay.apply,
                             sessions_ready=self.replay.sessions_ready)  # fmt: skip

    # -- start-up ---------------------------------------------------------------------

    def load(self) -> LoadProgress:
        """Replay the votes already in the log folder (all shards but this process's own)."""
        return self.replay.load()

    def reload(self) -> LoadProgress | None:
        """Replay every vote file again, this process's shard included, when votes arrive
        after start-up (the Hub answered late); None before the start-up replay has run
        (see :meth:`VoteReplay.reload`)."""
        return self.replay.reload()

    def start_loading(self) -> threading.Thread:
        """Replay in the background so visitors can battle while it runs."""
        return self.replay.start_loading()

    @property
    def detector(self) -> AnomalyDetector:
        """The anomalous-voter test as of the last vote (each full replay replaces it)."""
        return self.replay.detector

    # -- battles ----------------------------------------------------------------------

    def arena(self, arena_id: str) -> Arena:
        try:
            return self.registry.arena(arena_id)
        except KeyError:
            raise ArenaError(f"There is no arena {arena_id!r}.") from None

    def new_battle(self, arena_id: str, prompt: str | None = None,
                   language: str | None = None) -> BattleView:  # fmt: skip
        """Draw two models, generate both outputs concurrently, and open the battle.

        ``prompt`` None or empty takes a random prompt of the arena's set; a
        typed prompt equal to one of the set counts as that prompt. A model
        that fails or times out is left out and the pair redrawn: it does not
        lose the battle.

        ``language`` (one of :meth:`languages`, e.g. ``"de"``) is the language of a
        typed prompt: only models that speak it are drawn, they speak it, and the
        vote counts on that language's board. Without it a typed prompt has no
        category, as before; the arena's own prompts carry their own.
        """
        started = self.pacer.clock() if self.pacer else 0.0
        arena = self.arena(arena_id)
        text, prompt_id, category = self._prompt(arena, prompt, language or None)
        pool, live = self.pools[arena.id], self.live[arena.id]
        trusted = prompt_id is not None  # failures on typed prompts do not pause models
        failed: set[str] = set()
        busy = True  # every failure so far an engine busy with other typed prompts
        for _ in range(MAX_DRAWS):
            candidates = [live.index[m] for m in pool.pairable(category) if m not in failed]
            try:
                with self._rng_lock:
                    a, b = self.pairing[arena.id].draw(candidates, category, self._rng)
            except NoPairError:
                break
            ids = (live.entrants[a].id, live.entrants[b].id)
            drawn = self.pacer.clock() if self.pacer else 0.0
            outputs, made = self._outputs(arena, pool, ids, text, category, trusted)
            errors = [
                (m, o) for m, o in zip(ids, outputs, strict=True) if isinstance(o, BackendError)
            ]
            if not errors:
                made_at = drawn if made else None
                return self._open(arena, ids, outputs, text, prompt_id, category, started, made_at)
            for model_id, error in errors:
                log.warning(
                    "arena %s: %s failed (%s); redrawing the battle", arena.id, model_id, error
                )
                failed.add(model_id)
                busy &= isinstance(error, EngineBusy)
        if failed and not trusted:
            if busy:
                raise ArenaError("The voices are busy with other visitors' typed prompts. "
                                 "Try again in a moment.")  # fmt: skip
            raise ArenaError("The models could not answer this prompt. Try other words.")
        raise ArenaError(self._too_few_here(arena) or
                         "Not enough models are answering in this arena right now. "
                         "Try again in a minute.")  # fmt: skip

    def _too_few_here(self, arena: Arena) -> str | None:
        """Why the arena can never have a battle on this server, if fewer than two of its
        models can run here (availability is decided once per process: "try again in a
        minute" would never come true); None otherwise."""
        if sum(s.available for s in self.pools[arena.id].status().values()) >= 2:
            return None
        return (f"Fewer than two models of arena {arena.id!r} can run on this server (a hosted "
                "model needs its provider's token): it has no battles here.")  # fmt: skip

    def _outputs(self, arena: Arena, pool: ModelPool, ids, text, category, trusted) -> tuple:
        """Both sides ready for blind delivery (or the error of a side that failed), and
        whether they were made now (False only when both shaped clips were read).

        A speech battle whose two clips were shaped before (the warm-up shapes every set
        prompt) takes them as they are, by the output cache's keys, reading nothing else.
        """
        if self.blinder is None or arena.modality != "audio":  # only speech is shaped
            outputs = list(pool.generate_pair(*ids, text, category, trusted=trusted))
            if self.blinder is not None and arena.modality == "image":
                from arena_core.space.image_blinding import checked  # Pillow: image arenas only

                outputs = [checked(m, o) for m, o in zip(ids, outputs, strict=True)]
            return outputs, True
        sources = [pool.cache_key(m, text, category) for m in ids]
        if None not in sources:
            shaped = [self.blinder.shaped(s) for s in sources]
            if None not in shaped:
                return shaped, False
        outputs = pool.generate_pair(*ids, text, category, trusted=trusted)
        prepared = []
        for model_id, output, source in zip(ids, outputs, sources, strict=True):
            try:
                ok = not isinstance(output, BackendError)
                prepared.append(self.blinder.prepare(output, source) if ok else output)
            except ValueError as exc:
                prepared.append(BackendError(model_id, f"output cannot be delivered blind: {exc}"))
        return prepared, True

    def _open(self, arena, ids, outputs, text, prompt_id, category, started=0.0,
              made_at=None) -> BattleView:  # fmt: skip
        if self.blinder is not None:
            outputs = self.blinder.deliver(outputs)
        pool = self.pools[arena.id]
        style = battle_style(outputs, text, [pool.native_rate(m, text, category) for m in ids])
        clips = clip_lengths(outputs) if arena.modality == "audio" else {}
        handle, _ = self.book.open(arena=arena.id, model_a=ids[0], model_b=ids[1], prompt=text,
                                   prompt_id=prompt_id, category=category, style=style,
                                   clips=clips)  # fmt: skip
        held = self._hold(arena, ids, text, prompt_id, category, started, made_at)
        # Audio must be heard: both clips, at up to double speed or side by side, after
        # the hold (the visitor gets them only then).
        heard = sum(o.duration for o in outputs) if arena.modality == "audio" else 0.0
        self.book.delivered(handle, self.listen_share * heard + held if self.listen_share else 0.0)
        return BattleView(handle, arena.id, arena.modality, text, category, *outputs, hold=held)

    def _hold(self, arena, ids, text, prompt_id, category, started, made_at) -> float:
        """Seconds the answer still waits (``pacing``): the battle's last step, so the hold
        quantises its whole server time. Unheld only when the arena is warm and the battle
        was read from the shaped cache, as were the clips of every model that could have
        been drawn on its prompt: held or not then depends on the prompt, not the pair
        (asking for them all, without reading them, also keeps a prompt's clips equally
        recent in the LRU caches).

        ``made_at``: when the outputs began to be made (None: read from the shaped cache).
        That battle's time from there raises later floors (:meth:`Pacer.observe`); a redraw's
        earlier timeout says nothing about the machine's load."""
        if self.pacer is None:
            return 0.0
        pool = self.pools[arena.id]
        candidates = pool.pairable(category)
        warm = prompt_id is not None and made_at is None and self.blinder is not None
        warm = warm and all(self.blinder.has_shaped(pool.cache_key(m, text, category))
                            for m in candidates)  # fmt: skip
        due = self.pacer.due(started, arena.id, candidates, len(text), typed=not warm)
        if made_at is not None:
            self.pacer.observe(arena.id, ids, len(text), self.pacer.clock() - made_at)
        return max(0.0, due - self.pacer.clock())

    def languages(self, arena_id: str) -> tuple[str, ...]:
        """The prompt categories of an arena that are languages its models speak, in
        first-seen order (the multilingual arena's "en", "de", ...; none for topics), and
        in which two models that may meet both speak (see :meth:`_pairable`)."""
        arena = self.arena(arena_id)
        pool, (_, pairable) = self.pools[arena.id], self._pairable(arena)
        return tuple(c for c in self.live[arena_id].categories
                     if c in pairable and pool.language_of(c) is not None)  # fmt: skip

    def _pairable(self, arena: Arena) -> tuple:
        """The arena's set prompts, and its categories, in which two models that may meet
        (the registry's ``never_paired``) and can run here both speak, paused or not;
        computed once.

        A language spoken by one model only, or only by one never-paired group, can never
        give a battle: it was offered to visitors and its prompts drawn, and every such
        battle failed with "try again in a minute", which would never be true. Nor can one
        whose second speaker cannot run here (availability is decided once per process: an
        engine not installed, a hosted model without a token); a pause ends, so it counts.
        """
        drawable = self._drawable.get(arena.id)
        if drawable is None:
            pool, live = self.pools[arena.id], self.live[arena.id]
            blocked = self.pairing[arena.id].rules.blocked
            here = [m for m, s in pool.status().items() if s.available]
            categories = set()
            if len(here) < 2:  # one line, not one per category (a hosted arena without token)
                log.warning("arena %s: %s", arena.id, self._too_few_here(arena))
            for category in (None, *live.categories) if len(here) >= 2 else ():
                speakers = [live.index[m] for m in here if pool.serves(m, category)]
                allowed = np.triu(~blocked[np.ix_(speakers, speakers)], 1)
                if allowed.sum() == 1 and pool.language_of(category) is not None:
                    # Offered, but a visitor who picks it knows the two voices before voting
                    # (only the sides stay blind): the operator should know.
                    i, j = (live.entrants[speakers[k]].id for k in np.argwhere(allowed)[0])
                    log.warning("arena %s: only %s and %s may meet in language %r: a visitor "
                                "who picks it knows the pair before voting", arena.id, i, j,
                                category)  # fmt: skip
                if allowed.any():
                    categories.add(category)
                else:
                    log.warning("arena %s: no two models that may meet speak %r; its prompts "
                                "are never drawn", arena.id, category)  # fmt: skip
            prompts = tuple(p for p in arena.prompts if p.category in categories)
            drawable = self._drawable[arena.id] = (prompts, frozenset(categories))
        return drawable

    def _prompt(self, arena: Arena, prompt: str | None,
                language: str | None = None) -> tuple[str, str | None, str | None]:  # fmt: skip
        if language is not None and language not in self.languages(arena.id):
            raise ArenaError(f"Arena {arena.id!r} has no prompts in language {language!r}.")
        if prompt is None or (isinstance(prompt, str) and not prompt.strip()):
            prompts, _ = self._pairable(arena)
            if not prompts:
                raise ArenaError(self._too_few_here(arena) or
                                 f"No two models of arena {arena.id!r} can meet on its prompts.")  # fmt: skip
            with self._rng_lock:
                chosen = prompts[int(self._rng.integers(len(prompts)))]
            return chosen.text, chosen.id, chosen.category
        text = clean_prompt(prompt, self.max_prompt_chars)
        for known in arena.prompts:
            if known.text == text:
                return known.text, known.id, known.category
        return text, None, language

    # -- votes ------------------------------------------------------------------------

    def vote(self, handle: str | None, choice: str, voter: str, *, session: str | None = None,
             listened: str | None = None) -> Reveal:  # fmt: skip
        """Record the visitor's vote on their battle and reveal the models (see
        :meth:`VoteDesk.vote`: refusals, flags, the session's order, listening times)."""
        return self.desk.vote(handle, choice, voter, session=session, listened=listened)

    def judge_vote(self, handle: str | None, verdicts: tuple[str, str], judge_id: str,
                   token: str | None) -> tuple[Vote, Vote]:  # fmt: skip
        """A judge's two verdicts on a battle (see :meth:`JudgeDesk.vote`)."""
        return self.judges.vote(handle, verdicts, judge_id, token)

    def _version(self, arena_id: str, model_id: str) -> str | None:
        return self.pools[arena_id].model_version(model_id)

    # -- boards -----------------------------------------------------------------------

    def board(self, arena_id: str, category: str | None = None, *,
              window: Window = ALL_TIME) -> Board:  # fmt: skip
        """The live board of an arena (a category, a time window), with the models that
        cannot run here marked, and left out when they have no votes."""
        self.arena(arena_id)
        live = self.live[arena_id]
        if category is not None and category not in live.categories:
            raise ArenaError(f"Arena {arena_id!r} has no category {category!r}.")
        pool = self.pools.get(arena_id)
        available = {m: s.available for m, s in pool.status().items()} if pool else None
        return live.board(category, skipped=self.progress.skipped, window=window,
                          available=available)  # fmt: skip

    def unavailable(self, arena_id: str) -> list[str]:
        """Models of the arena that cannot run here: part of the settings a board is
        replayed with (``leaderboard --unavailable``), for the page, the API and snapshots."""
        return [m for m, s in self.pools[arena_id].status().items() if not s.available]

    def model_status(self) -> dict[str, str]:
        """``"<arena>/<model>"``: "available", "paused: <why>", or why the model cannot run here."""
        out = {}
        for arena_id, pool in self.pools.items():
            for model_id, status in pool.status().items():
                out[f"{arena_id}/{model_id}"] = (
                    status.reason if not status.available
                    else f"paused: {status.pause_reason}" if status.state == "paused"
                    else status.state
                )  # fmt: skip
        return out

    def latency(self, arena_id: str) -> dict[str, float | None]:
        """Median generation seconds per model (uncached generations since start-up)."""
        pool = self.pools[arena_id]
        return {m.id: pool.median_latency(m.id) for m in self.arena(arena_id).models}

    def close(self) -> None:
        if self.warmup is not None:
            self.warmup.stop()
        for pool in self.pools.values():
            pool.close()
        self.vote_log.close()
