"""What the page shows, as plain values: board cells, summaries, the reveal. No Gradio here.

The app turns these into component updates; keeping them pure lets the
wording be tested without a browser. The board's HTML table is in
:mod:`~arena_core.page.table`, the battle's pieces in :mod:`~arena_core.page.battle`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

import numpy as np

from arena_core.dataset.hub import SyncStatus
from arena_core.leaderboard import Board, LeaderboardRow
from arena_core.space.service import LoadProgress, Reveal
from arena_core.space.views import VOTE_WORDS
from arena_core.window import ALL_TIME, Window

#: Periods the leaderboard offers: value -> (label, days back; None: every vote).
PERIODS = {"all": ("All time", None), "30d": ("Last 30 days", 30)}
#: Rank cell of a model without battles (the group below the ranked ones).
NOT_YET_RATED = "not yet rated"


def period_window(period: str, now: datetime) -> Window:
    """The time window of a period choice (:data:`PERIODS`), as of ``now``."""
    _, days = PERIODS[period]
    return ALL_TIME if days is None else Window.recent(days, now)


def rank_text(r: LeaderboardRow, groups: bool = False) -> str:
    """The rank band ("3", "2–5"), with the group when the board has several."""
    if r.battles == 0:
        return NOT_YET_RATED
    if r.rank is None:
        return "–"
    band = str(r.rank) if r.rank == r.rank_worst else f"{r.rank}–{r.rank_worst}"
    return f"{band} (group {r.component})" if groups else band


def interval_text(r: LeaderboardRow) -> str:
    """The interval as offsets from the rating, or the one-sided bound of an unbounded model."""
    if r.rating is None:
        if r.ci_low is not None:
            return f"≥ {r.ci_low:.0f} (never beaten)"
        if r.ci_high is not None:
            return f"≤ {r.ci_high:.0f} (never won)"
        return "unbounded"
    if r.ci_low is None or r.ci_high is None:
        return ""
    return f"+{r.ci_high - r.rating:.0f} / -{r.rating - r.ci_low:.0f}"


def board_summary(board: Board, progress: LoadProgress, sync: SyncStatus | None = None,
                  names: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """Above the table: votes counted, window, last vote, what was left out, warnings, Hub sync.

    A board without votes says so and invites the first one instead of showing blanks.
    ``names`` (model id to display name): the warnings name models as the table does; the
    board's own warnings, which the CLI and the JSON keep, use ids.
    """
    if progress.error:
        return f"⚠️ The vote log could not be replayed ({progress.error}); showing new votes only."
    if not progress.done:
        return "⏳ Replaying the vote log… the board fills in when it is done."
    where = f" in category **{board.category}**" if board.category else ""
    since = board.window.to_json()["since"]
    if since:
        where += f" since {since[:10]} {since[11:16]} UTC (`--since {since[:19]}Z`)"
    if not board.votes_used:
        line = f"**No votes yet{where}: be the first.** Open the Arena tab, listen, and vote."
    else:
        plural = "" if board.votes_used == 1 else "s"
        line = f"**{board.votes_used:,} vote{plural} counted**{where}"
        if board.last_vote:
            line += f" · last vote {board.last_vote.replace('T', ' ')[:16]} UTC"
    left_out = sum(board.skipped.values())
    if left_out:
        line += f" · {left_out} votes left out ({_reasons(board.skipped)})"
    if board.votes_used and board.fit is not None and board.fit.spread is not None:
        line += f" · models spread ±{board.fit.spread:.0f} points around their priors"
    line += "".join(f"\n\n⚠️ {named(w, names or {})}" for w in board.warnings)
    return line + (f"\n\n{sync_line(sync)}" if sync is not None else "")


def named(text: str, names: Mapping[str, str]) -> str:
    """``text`` with each model id of ``names`` replaced by its name: whole ids only (an id
    inside a longer one stays), the longest first."""
    if not names:
        return text
    ids = sorted(names, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, ids)) + r")(?![\w/.-])")
    return pattern.sub(lambda m: names[m[1]], text)


def sync_line(sync: SyncStatus) -> str:
    """The Hub's side: when the votes were last pushed, how many wait, what went wrong."""
    pushed = sync.last_push.strftime("%Y-%m-%d %H:%M UTC") if sync.last_push else "not yet"
    line = f"Dataset: last push {pushed} · {sync.waiting} votes waiting to be pushed"
    if sync.unreachable_since is not None:
        line += f" · ⚠️ Hub unreachable since {sync.unreachable_since:%Y-%m-%d %H:%M UTC}"
    return line + (f" · ⚠️ {sync.last_error}" if sync.last_error else "")


def _reasons(skipped: Mapping[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(skipped.items()))


def reveal_markdown(reveal: Reveal) -> str:
    """Who was A and B, and how their ratings moved."""
    lines = [f"You voted **{VOTE_WORDS[reveal.vote]}**.", ""]
    for label, side in (("A", reveal.a), ("B", reveal.b)):
        line = f"- **Model {label}**: {side.name} (`{side.model_id}`)"
        if side.before is not None:
            delta = side.after - side.before
            line += f" — rating {side.before:.0f} → {side.after:.0f} ({delta:+.1f})"
        lines.append(line)
    if reveal.note:
        lines += ["", reveal.note]
    return "\n".join(lines)


def reveal_data(reveal: Reveal) -> dict:
    """The reveal as plain JSON for API clients."""
    return {
        "vote": reveal.vote,
        "vote_id": reveal.vote_id,
        "prompt": reveal.prompt,
        "counted": reveal.counted,
        "note": reveal.note,
        "model_a": {"id": reveal.a.model_id, "name": reveal.a.name,
                    "rating_before": reveal.a.before, "rating_after": reveal.a.after},
        "model_b": {"id": reveal.b.model_id, "name": reveal.b.name,
                    "rating_before": reveal.b.before, "rating_after": reveal.b.after},
    }  # fmt: skip


def win_fraction(wins: np.ndarray) -> np.ndarray:
    """Share of decided battles row beat column (NaN where they never decided one)."""
    decided = wins + wins.T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(decided > 0, wins / decided, np.nan)
