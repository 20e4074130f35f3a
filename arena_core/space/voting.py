"""A visitor's vote, from the battle record to the written row and the reveal.

:class:`VoteDesk` is the human half of what :class:`~arena_core.space.judging.JudgeDesk`
is for judges: it closes the battle in the book (its models, prompt and origin come
from the server's record, never from the client), decides the flags the writer
knows (rate limit, a voter already found anomalous), numbers the vote in its
session (``sessions.py``), keeps the browser's listening times only where plausible,
writes the row through the log (the live ratings follow in the log's ``then``) and
says what the visitor sees next.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from arena_core.integrity.anomaly import ANOMALOUS_FLAG
from arena_core.integrity.limiter import RateLimiter
from arena_core.ratings.elo import EloStep
from arena_core.registry import Registry
from arena_core.space.battles import BattleBook, BattleError
from arena_core.space.sessions import SessionCounter, listen_report, listen_seconds
from arena_core.space.views import VOTE_WORDS, ArenaError, Reveal, Side
from arena_core.votes.log import ClockBehindError, LogClosedError, VoteLog, VoteWriteError
from arena_core.votes.schema import VOTES, Vote

log = logging.getLogger(__name__)

#: Flag written on votes over the rate limit (kept in the log, left out of ratings).
RATE_LIMITED = "rate_limited"
#: Why a vote was not counted (None: it will be, once the ratings are loaded).
NOT_COUNTED = {
    RATE_LIMITED: "This vote was over the rate limit: it is kept but not counted.",
    ANOMALOUS_FLAG: "Votes from this voter differ too much from everyone else's on the same "
    "pairs: they are kept but not counted.",
    None: "Ratings are still loading; your vote is saved and will count.",
}
#: The refusal of a vote cast while the server shuts down (the log is closed, see
#: ``VoteLog.refuse``): the battle goes with the process, so the visitor starts a new one.
RESTARTING = ("The server is restarting: your vote was not saved. Please vote again in a "
              "minute, on a new battle.")  # fmt: skip


class VoteDesk:
    """Takes visitors' votes on open battles.

    Parameters
    ----------
    registry, book, vote_log, limiter : the service's.
    sessions : SessionCounter
    is_flagged : callable voter -> bool, the anomalous-voter test's current verdict.
    versions : callable (arena id, model id) -> version or None
    apply : callable run on each vote under the log's lock (the service's live update).
    sessions_ready : callable -> bool, whether every earlier vote has been replayed (until
        then a session's rank is unknown and written as null).
    """

    def __init__(self, registry: Registry, book: BattleBook, vote_log: VoteLog,
                 limiter: RateLimiter, sessions: SessionCounter, *,
                 is_flagged: Callable[[str], bool], versions: Callable[[str, str], str | None],
                 apply: Callable, sessions_ready: Callable[[], bool]):  # fmt: skip
        self.registry, self.book, self.vote_log = registry, book, vote_log
        self.limiter, self.sessions = limiter, sessions
        self._is_flagged, self._versions = is_flagged, versions
        self._apply, self._ready = apply, sessions_ready

    def vote(self, handle: str | None, choice: str, voter: str, *, session: str | None = None,
             listened: str | None = None) -> Reveal:  # fmt: skip
        """Record the visitor's vote on their battle and reveal the models.

        Refused with a message, and nothing written: an unknown or expired
        battle, a second vote, a vote before both outputs arrived, a choice
        other than a, b, tie or both_bad. Over the rate limit, the vote is
        written flagged and left out of the ratings. ``session`` is the salted
        session hash; ``listened`` the page's report of the seconds played
        (:func:`~arena_core.space.sessions.listen_report`), ignored when implausible.
        """
        if choice not in VOTES:
            raise ArenaError(f"A vote is one of {', '.join(VOTES)}.")
        try:
            battle = self.book.close_for_vote(handle)
        except BattleError as exc:
            if exc.answer is not None and exc.answer.vote == choice:
                return exc.answer  # the same vote again (its answer was lost): what was recorded
            message = str(exc) if exc.answer is None else (
                f"You already voted on this battle ({VOTE_WORDS[exc.answer.vote]}). Start a new "
                "battle.")  # fmt: skip
            raise ArenaError(message, reason=exc.reason, wait=exc.wait,
                             reveal=exc.answer) from None  # fmt: skip
        place = self.limiter.take(voter)
        flags = () if place is not None else (RATE_LIMITED,)
        if self._is_flagged(voter):
            flags += (ANOMALOUS_FLAG,)
        rank = self.sessions.next(session) if session else None
        order = rank if rank is not None and self._ready() else None
        heard_a, heard_b = listen_report(listened)
        try:
            vote, step = self.vote_log.append(
                arena=battle.arena, model_a=battle.model_a, model_b=battle.model_b, vote=choice,
                battle_id=battle.battle_id, prompt_id=battle.prompt_id, prompt=battle.prompt,
                category=battle.category, voter=voter, voter_kind="human", flags=flags,
                model_a_version=self._versions(battle.arena, battle.model_a),
                model_b_version=self._versions(battle.arena, battle.model_b),
                session_id=session, session_order=order,
                listen_a_s=listen_seconds(heard_a, battle.clips.get("clip_a_s")),
                listen_b_s=listen_seconds(heard_b, battle.clips.get("clip_b_s")),
                prompt_origin=battle.prompt_origin, then=self._apply, **battle.style,
                **battle.clips,
            )  # fmt: skip
        except VoteWriteError as exc:
            log.error("vote on battle %s not saved: %s", battle.battle_id, exc)
            if exc.rolled_back:  # nothing reached the log: the visitor may vote again
                if rank is not None:
                    self.sessions.release(session, rank)
                if place is not None:
                    self.limiter.give_back(voter, place)
                self.book.reopen(handle)
                if isinstance(exc, LogClosedError):  # its last push is under way
                    raise ArenaError(RESTARTING) from None
                if isinstance(exc, ClockBehindError):  # voting again now would fail again
                    minutes = max(1, math.ceil(exc.wait / 60))
                    raise ArenaError(f"The server cannot record votes for about {minutes} "
                                     "minutes (its clock is being corrected); your vote was not "
                                     "saved. Please vote again then.") from None  # fmt: skip
                raise ArenaError("Your vote could not be saved. Please vote again.") from None
            raise ArenaError("Your vote may not have been saved; this battle is closed.") from None
        reveal = self.reveal(vote, step)
        self.book.answered(handle, reveal)
        return reveal

    def reveal(self, vote: Vote, step: EloStep | None) -> Reveal:
        """The models' names, and how their ratings moved if the vote counted now."""
        arena = self.registry.arena(vote.arena)
        a, b = arena.model(vote.model_a), arena.model(vote.model_b)
        if step is None:
            if self._is_flagged(vote.voter):
                note = NOT_COUNTED[ANOMALOUS_FLAG]
            else:
                note = NOT_COUNTED[RATE_LIMITED if RATE_LIMITED in vote.flags else None]
            return Reveal(vote.vote, Side(a.id, a.name, None, None), Side(b.id, b.name, None, None),
                          counted=False, note=note, vote_id=vote.vote_id,
                          prompt=vote.prompt)  # fmt: skip
        return Reveal(
            vote.vote,
            Side(a.id, a.name, step.before_a, step.after_a),
            Side(b.id, b.name, step.before_b, step.after_b),
            counted=True,
            vote_id=vote.vote_id,
            prompt=vote.prompt,
        )
