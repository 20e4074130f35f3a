"""Judges' votes, through the visitor's path behind the operator's token.

A judge's verdicts are vote rows like a visitor's: the battle comes from the same
book (its models and prompt from the server's record, never from the caller), the
rows go through the same log and the same live update. What differs is who may
write them: only a caller holding ``ARENA_JUDGE_TOKEN`` (compared in constant
time), so no visitor can add votes the judges' analysis would count, and judge
rows (``voter_kind = "judge"``) never enter the human boards
(:class:`~arena_core.leaderboard.BoardParams` selects human votes by default).

A battle takes both of a judge's verdicts (sides as drawn, then swapped) in one
write, all or nothing, so a crash cannot leave half of a judged pair in the log.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from arena_core.space.battles import BattleBook, BattleError
from arena_core.space.views import ArenaError
from arena_core.votes.log import VoteLog, VoteWriteError
from arena_core.votes.schema import STYLE_FIELDS, VOTES, Vote


class JudgeDesk:
    """Takes judges' verdicts on open battles.

    Parameters
    ----------
    registry : Registry
        Its ``judges`` say who may vote in which arena.
    book : BattleBook
    vote_log : VoteLog
    versions : callable (arena id, model id) -> version or None
    apply : callable run on each vote under the log's lock (the service's live update)
    token : str or None
        ``ARENA_JUDGE_TOKEN``; without one no judge vote is taken.
    """

    def __init__(self, registry, book: BattleBook, vote_log: VoteLog,
                 versions: Callable[[str, str], str | None], apply: Callable,
                 token: str | None):  # fmt: skip
        self.registry, self.book, self.vote_log = registry, book, vote_log
        self._versions, self._apply = versions, apply
        self._token = token.encode() if token else None

    def vote(self, handle: str | None, verdicts: tuple[str, str], judge_id: str,
             token: str | None) -> tuple[Vote, Vote]:  # fmt: skip
        """Record a judge's two verdicts on a battle: with the sides as drawn, and swapped.

        Refused with a message, and nothing written: a missing or wrong token, an
        unknown judge, a judge not entered in the battle's arena, a verdict other than
        a, b, tie or both_bad, and whatever the visitor's vote is refused for (an
        unknown, expired or already voted battle). The listening gate does not apply.
        """
        if (
            self._token is None
            or not isinstance(token, str)
            or not hmac.compare_digest(token.encode(), self._token)
        ):
            raise ArenaError("Judge votes need the operator's judge token.")
        try:
            spec = self.registry.judge(judge_id)
        except KeyError:
            raise ArenaError(f"There is no judge {judge_id!r}.") from None
        if len(verdicts) != 2 or any(v not in VOTES for v in verdicts):
            raise ArenaError(f"A judge gives two verdicts, each one of {', '.join(VOTES)}.")
        try:
            battle = self.book.close_for_vote(handle, gate=False)
        except BattleError as exc:
            raise ArenaError(str(exc)) from None
        if battle.arena not in spec.arenas:
            self.book.reopen(handle)
            raise ArenaError(f"Judge {judge_id!r} does not judge arena {battle.arena!r}.")
        records = [self._record(battle, verdicts[0], judge_id, swap=False),
                   self._record(battle, verdicts[1], judge_id, swap=True)]  # fmt: skip
        try:
            results = self.vote_log.append_all(records, then=self._apply)
        except VoteWriteError as exc:
            if exc.rolled_back:
                self.book.reopen(handle)
            raise ArenaError(f"The verdicts could not be saved: {exc}") from None
        return tuple(r[0] if isinstance(r, tuple) else r for r in results)

    def _record(self, battle, verdict: str, judge_id: str, *, swap: bool) -> dict:
        first, second = (
            (battle.model_b, battle.model_a) if swap else (battle.model_a, battle.model_b)
        )
        style = swapped_style(battle.style) if swap else dict(battle.style)
        clips = swapped_clips(battle.clips) if swap else dict(battle.clips)
        return dict(
            arena=battle.arena, model_a=first, model_b=second, vote=verdict,
            battle_id=battle.battle_id, prompt_id=battle.prompt_id, prompt=battle.prompt,
            category=battle.category, voter=f"judge:{judge_id}", voter_kind="judge", judge=judge_id,
            prompt_origin=battle.prompt_origin,
            model_a_version=self._versions(battle.arena, first),
            model_b_version=self._versions(battle.arena, second), **style, **clips,
        )  # fmt: skip


def swapped_clips(clips: dict) -> dict:
    """A battle's delivered clip lengths (``clip_a_s``, ``clip_b_s``) with the sides exchanged.

    A judge's rows carry them as a visitor's do: the schema leaves them null only when the
    clips are not audio, and until session 33 every judge row of a speech battle had none.
    """
    if not clips:
        return {}
    return {"clip_a_s": clips.get("clip_b_s"), "clip_b_s": clips.get("clip_a_s")}


def swapped_style(style: dict) -> dict:
    """A battle's style fields with the sides exchanged (the second verdict's order)."""
    out = {}
    for name in STYLE_FIELDS:
        a, b = f"model_a_{name}", f"model_b_{name}"
        if a in style or b in style:
            out[a], out[b] = style.get(b), style.get(a)
    return out
