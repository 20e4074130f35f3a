"""One row of a board and its columns: defined once, for the table, the CSV and the JSON.

:class:`LeaderboardRow`'s field order is the column order; each field's metadata
gives its label, its rounding and what it means. :mod:`arena_core.leaderboard`
fills the rows; the CLI's table, CSV and JSON and the Space's table read them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


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
    elo: float = _col("Seq. Elo", 1, "Sequential Elo replayed in vote order.")
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
