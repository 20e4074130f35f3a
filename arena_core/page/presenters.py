"""What the page shows, as plain values: tables, Markdown, JSON. No Gradio here.

The app turns these into component updates; keeping them pure lets the
wording and the table layout be tested without a browser.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from arena_core.dataset.hub import SyncStatus
from arena_core.leaderboard import ESTABLISHED, Board, LeaderboardRow
from arena_core.space.service import LoadProgress, Reveal

#: Words for each vote, as the visitor chose it.
VOTE_WORDS = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both are bad"}
#: Battles before the page shows a model's interval. Bootstrap intervals say
#: nothing about a handful of votes (one vote, resampled, is always that vote:
#: an interval of width zero), so below this the interval cell stays empty.
MIN_BATTLES_FOR_INTERVAL = 10
#: Columns of the page's leaderboard table, in order.
TABLE_COLUMNS = ["Rank", "Rank (UB)", "Model", "Params", "Rating", "95% CI", "Seq. Elo",
                 "Elo / M params", "Battles", "W / L / T / Both bad", "Win rate",
                 "Latency (s)", "Status"]  # fmt: skip
#: Relative widths of those columns on the page.
TABLE_WIDTHS = ["4%", "5%", "22%", "6%", "6%", "8%", "6%", "6%", "6%", "10%", "6%", "6%", "9%"]
#: How each column renders (the model name is Markdown, to italicise provisional models).
TABLE_TYPES = ["number", "str", "markdown", "str", "number", "str", "number", "str", "number",
               "str", "str", "str", "str"]  # fmt: skip


def board_table(
    board: Board, latency: Mapping[str, float | None], show_provisional: bool = True
) -> pd.DataFrame:
    """The leaderboard as the page shows it; provisional models marked or left out."""
    rows = [r for r in board.rows if show_provisional or r.status == ESTABLISHED]
    data = [_table_row(r, latency.get(r.model_id)) for r in rows]
    return pd.DataFrame(data, columns=TABLE_COLUMNS)


def _table_row(r: LeaderboardRow, latency: float | None) -> list:
    settled = r.status == ESTABLISHED
    ci = ""
    if r.ci_low is not None and r.battles >= MIN_BATTLES_FOR_INTERVAL:
        ci = f"+{r.ci_high - r.rating:.0f} / -{r.rating - r.ci_low:.0f}"
    return [
        r.rank,
        "" if r.rank_ub is None else r.rank_ub,
        r.model if settled else f"*{r.model}*",  # Markdown: unsettled ratings in italics
        r.params or "",
        round(r.rating, 1),
        ci,
        round(r.elo, 1),
        "" if r.elo_per_m_params is None else round(r.elo_per_m_params, 4),
        r.battles,
        f"{r.wins} / {r.losses} / {r.ties} / {r.both_bad}",
        "" if r.win_rate is None else f"{100 * r.win_rate:.1f}%",
        "" if latency is None else round(latency, 2),
        r.status,
    ]


def board_summary(board: Board, progress: LoadProgress, sync: SyncStatus | None = None) -> str:
    """One line above the table: votes counted, last vote, what was left out, Hub sync."""
    if progress.error:
        return f"⚠️ The vote log could not be replayed ({progress.error}); showing new votes only."
    if not progress.done:
        return "⏳ Replaying the vote log… the board fills in when it is done."
    where = f" in category **{board.category}**" if board.category else ""
    last = board.last_vote.replace("T", " ")[:19] + " UTC" if board.last_vote else "none yet"
    left_out = sum(board.skipped.values())
    note = f" · {left_out} votes left out ({_reasons(board.skipped)})" if left_out else ""
    line = (
        f"{board.votes_used} votes counted{where} · last vote: {last}{note} · *italic*: provisional"
    )
    return line + (f"\n\n{sync_line(sync)}" if sync is not None else "")


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
