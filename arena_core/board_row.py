"""One row of a board and its columns: defined once, for the table, the CSV and the JSON.

:class:`LeaderboardRow`'s field order is the column order; each field's metadata
gives its label, its rounding and what it means. :mod:`arena_core.leaderboard`
fills the rows; the CLI's table, CSV and JSON (:func:`write_board`, :func:`format_table`)
and the Space's table read them, with the board's warnings (:func:`board_warnings`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING

from arena_core.printable import controls_escaped, emit, spreadsheet_cell, terminal_safe
from arena_core.provenance import UNRATED_NOTE
from arena_core.ratings.fit import MAX_DROPPED_SHARE, BoardFit

if TYPE_CHECKING:  # the leaderboard imports this module
    from arena_core.leaderboard import Board


def _col(label: str, digits: int | None = None, doc: str = ""):
    return field(metadata={"label": label, "digits": digits, "doc": doc})


@dataclass(frozen=True)
class LeaderboardRow:
    """One model on a board. Field order is column order; metadata gives labels."""

    rank: int | None = _col(
        "Rank", doc="Best plausible rank in its group: 1 + models whose interval lies wholly "
        "above. None: not ranked (no battles, or no finite rating)."
    )  # fmt: skip
    rank_worst: int | None = _col(
        "Rank (worst)", doc="Worst plausible rank: models in its group minus those wholly below."
    )
    component: int | None = _col(
        "Group", doc="Comparison group (1 = most battles); ranks compare only within one."
    )
    model: str = _col("Model")
    model_id: str = _col("Model id")
    params: str | None = _col("Params")
    params_m: float | None = _col("Params (M)", 1)
    rating: float | None = _col(
        "Rating", 1, "Bradley-Terry (or Elo with --method elo) on the 1000/400 scale; "
        "None when the maximum-likelihood rating is infinite."
    )  # fmt: skip
    ci_low: float | None = _col("95% CI low", 1)
    ci_high: float | None = _col("95% CI high", 1)
    elo: float | None = _col(
        "Seq. Elo", 1, "Sequential Elo replayed in vote order; None when the board was computed "
        "from a counts table alone, which holds no vote order."
    )  # fmt: skip
    elo_per_m_params: float | None = _col("Elo per M params", 4)
    battles: int = _col("Battles")
    wins: int = _col("Wins")
    losses: int = _col("Losses")
    ties: int = _col("Ties")
    both_bad: int = _col("Both bad")
    win_rate: float | None = _col("Win rate", 3, "Wins over decided battles.")
    status: str = _col("Status", doc="prior (no battles), provisional or established.")
    provenance: str | None = _col(
        "Provenance", doc="What the rating rests on: prior (a published benchmark; no votes, "
        "or votes still outweighed by it), blended (the benchmark and votes weighing at least "
        "as much), arena (votes, no published prior, established), arena_thin (votes, no "
        "published prior, too few to trust). None: neither, no rating (see arena_core.provenance)."
    )  # fmt: skip
    votes_share: float | None = _col(
        "Votes' share", 3, "Share of the rating's weight the votes carry against the prior: "
        "Fisher information over information plus the prior's precision (blended from 0.5)."
    )  # fmt: skip
    prior_rating: float | None = _col(
        "Prior rating", 1, "The published benchmark figure on the rating scale; None without one."
    )
    prior_source: str | None = _col("Prior source", doc="Where the benchmark figure was published.")
    prior_shift: float | None = _col(
        "Shift from prior", 1, "Rating minus prior rating: how far the votes moved the model."
    )
    available: bool = _col("Available", doc="Whether the model can run on the server now.")
    note: str | None = _col("Note", doc="Why a model has no (finite) rating.")

    @property
    def unbounded(self) -> bool:
        """Played, but its votes give it no finite maximum-likelihood rating (``note`` says why)."""
        return bool(self.battles) and self.note is not None


#: Column names, labels and rounding, in order.
COLUMNS = tuple(fields(LeaderboardRow))


def rounded(row: LeaderboardRow) -> dict:
    """The row as a dict, numbers rounded as displayed (for JSON and CSV)."""
    out = asdict(row)
    for col in COLUMNS:
        digits = col.metadata["digits"]
        if digits is not None and out[col.name] is not None:
            out[col.name] = round(float(out[col.name]), digits)
    return out


def write_board(board: Board, fmt: str, out, document: dict | None = None) -> None:
    """The board as JSON (``document``: the board's JSON with its revision, code version and
    settings, when the caller has them), CSV (rows only: a CSV has no room for them) or text."""
    if fmt == "json":  # made whole first: a value JSON cannot hold leaves ``out`` empty
        emit(json.dumps(document or board.to_json(), indent=1, allow_nan=False) + "\n", out)
    elif fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=[c.name for c in COLUMNS], lineterminator="\n")
        writer.writeheader()
        # Text cells as text: without --registry the names and ids are the votes' own, any
        # string, and one starting with "=" was a formula the reader's spreadsheet ran.
        writer.writerows({k: spreadsheet_cell(v) for k, v in rounded(r).items()}
                         for r in board.rows)  # fmt: skip
    else:
        emit(format_table(board) + "\n", out)


#: Columns of the text table (the full set, with ids, is in JSON and CSV).
_TABLE_COLUMNS = ("rank", "rank_worst", "component", "model", "rating", "ci_low", "ci_high",
                  "elo", "battles", "wins", "losses", "ties", "both_bad", "win_rate", "status",
                  "provenance")  # fmt: skip


def format_table(board: Board, names: dict[str, str] | None = None) -> str:
    """A plain-text table for terminals, with a summary and the board's warnings.

    Models are listed by display name (``names``: id -> name, the registry's; the board's
    own names otherwise); notes name them the same way. JSON and CSV keep ids.
    """
    names = {r.model_id: terminal_safe((names or {}).get(r.model_id, r.model))
             for r in board.rows}  # fmt: skip
    cols = [c for c in COLUMNS if c.name in _TABLE_COLUMNS]
    head = [c.metadata["label"] for c in cols]
    body = [[names[r.model_id] if c.name == "model" else
             _cell(getattr(r, c.name), c.metadata["digits"]) for c in cols] for r in board.rows]  # fmt: skip
    widths = [max(len(x) for x in column) for column in zip(head, *body, strict=False)]
    text_col = [c.name for c in cols].index("model")
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) if i != text_col else v.ljust(w) for i, (v, w) in
                        enumerate(zip(row, widths, strict=True))) for row in body]  # fmt: skip
    where = terminal_safe(board.arena)
    where += f" / {terminal_safe(board.category)}" if board.category else ""
    window = board.window.to_json()
    if not board.window.all_time:
        where += f" (votes from {window['since'] or 'the start'} to {window['until'] or 'now'})"
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(board.skipped.items())) or "none"
    lines.append(
        f"\n{where}: {board.votes_used} votes used, method {board.method}; skipped: {skipped}"
    )
    unrated = [names[r.model_id] for r in board.rows if r.provenance is None]
    lines += [f"note: {names[r.model_id]}: {r.note}" for r in board.rows if r.unbounded]
    lines += [f"{UNRATED_NOTE}: {', '.join(unrated)}"] if unrated else []
    # The warnings name models by their raw ids (the JSON keeps them so): escaped here, or an
    # id's escape sequence or newline reached the terminal the names above are quoted for.
    lines += [f"warning: {controls_escaped(w)}" for w in board.warnings]
    return f"== {terminal_safe(board.arena)} ==\n" + "\n".join(lines)


def _cell(value, digits) -> str:
    if value is None:
        return "-"
    if digits is not None:
        return f"{value:.{digits}f}"
    return str(value)


def board_warnings(rows: Sequence[LeaderboardRow], fit: BoardFit, *, prior_weight, method: str,
                   flat: Sequence[str] = ()) -> tuple[str, ...]:  # fmt: skip
    """What a reader of a board must know: groups that never met, unbounded ratings, dropped
    replicates, intervals the bootstrap could not measure (``flat``: those models' ids).
    ``prior_weight`` and ``method`` are the board's
    (:class:`~arena_core.leaderboard.BoardParams`)."""
    out = []
    groups: dict[int, list[str]] = {}
    for r in rows:
        if r.component is not None:
            groups.setdefault(r.component, []).append(r.model_id)
    if len(groups) > 1:
        listed = "; ".join(f"group {k}: {', '.join(ids)}" for k, ids in sorted(groups.items()))
        across = ("with no prior each group is centred on 1000 on its own, so ratings of different "
                  "groups cannot be compared" if prior_weight == 0 else
                  "ratings of different groups are related by the prior alone")  # fmt: skip
        out.append(f"The votes form {len(groups)} groups of models that never met, directly or "
                   f"through others ({listed}). Ranks compare models within a group only; "
                   f"{across}.")  # fmt: skip
    unbounded = [r.model_id for r in rows if r.unbounded]
    if unbounded:
        out.append(f"{len(unbounded)} model(s) have no finite maximum-likelihood rating: "
                   f"{', '.join(unbounded)}. They are listed without a rating, with the bound "
                   "their votes support; a prior weight above 0 rates every model.")  # fmt: skip
    # Bootstrap replicates make the intervals of a Bradley-Terry board; an Elo board shows none.
    if method == "bt" and fit.dropped and fit.group_dropped is not None:
        out += _dropped_warnings(fit, sorted(groups))
    if flat and method == "bt":
        out.append(f"{len(flat)} model(s) have no interval: every bootstrap resample of the "
                   f"votes gave them the same rating ({', '.join(flat)}), which says the votes "
                   "are too few to measure how sure it is, not that it is certain; a prior "
                   "weight above 0 gives intervals.")  # fmt: skip
    return tuple(out)


def _dropped_warnings(fit: BoardFit, groups: list[int]) -> list[str]:
    """Per comparison group, the bootstrap replicates left out of its intervals (a replicate
    infinite in one group is left out of that group's only)."""
    out = []
    for k in groups:
        dropped = int(fit.group_dropped[fit.component == k - 1].max(initial=0))
        where = f" in group {k}" if len(groups) > 1 else ""
        if dropped > MAX_DROPPED_SHARE * fit.rounds:
            out.append(f"{dropped} of {fit.rounds} bootstrap replicates could not be fitted"
                       f"{where} (a rating was infinite, or the decayed votes add up to less "
                       "than half a vote): too few to give intervals, so none are given"
                       f"{' there' if where else ''}; a prior weight above 0 gives them.")  # fmt: skip
        elif dropped:
            out.append(f"{dropped} of {fit.rounds} bootstrap replicates had infinite ratings"
                       f"{where} and were left out; the intervals{where and ' there'} rest on "
                       f"the other {fit.rounds - dropped}.")  # fmt: skip
    return out
