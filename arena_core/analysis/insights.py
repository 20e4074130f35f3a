"""From a vote table to the researchers' per-prompt complementarity of an arena's models.

The statistics are pure functions over arrays (:mod:`arena_core.analysis.complementarity`);
this module picks the votes a board counts (:func:`~arena_core.analysis.boards.counted_frame`:
no flagged votes, no anomalous voters' votes) cast by humans in one arena, keys their
prompts by ``prompt_id``, maps model ids to indices, and names the results. A vote with
no ``prompt_id`` (a typed prompt, or an imported battle that carries none) cannot be
matched with other votes on the same prompt: it is left out and counted. The CLI's
``analyze complementarity`` and the Space share it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from arena_core.analysis.boards import counted_frame
from arena_core.analysis.complementarity import (
    Complementarity,
    ComplementarityParams,
    PromptVotes,
    complementarity,
)
from arena_core.ratings.counts import OUTCOME_CODES

#: Columns the analysis reads (``read_votes(..., columns=COMPLEMENTARITY_COLUMNS)``).
COMPLEMENTARITY_COLUMNS = ("arena", "model_a", "model_b", "vote", "prompt_id", "voter",
                           "voter_kind", "flags")  # fmt: skip


@dataclass(frozen=True)
class PairRow:
    """One pair of models by id; gains in win rate against the rest of the field."""

    model_a: str
    model_b: str
    overlap: int
    spearman: float | None
    oracle_gain: float
    gain_low: float
    gain_high: float
    flagged: bool
    naive_gain: float
    noise_gain: float
    p_value: float


@dataclass(frozen=True)
class ModelRow:
    model: str
    #: Win rate against the field under the arena's global Bradley-Terry fit.
    field_score: float
    #: Prompts it has votes on, and those votes.
    prompts: int
    votes: int


@dataclass(frozen=True)
class ComplementarityReport:
    """Every measured pair of an arena, most complementary first (by ``oracle_gain``)."""

    arena: str
    pairs: tuple[PairRow, ...]
    models: tuple[ModelRow, ...]
    #: Human votes with a prompt id that entered the analysis, and the prompts they cover.
    votes_used: int
    prompts: int
    #: Counted human votes left out because they carry no prompt id.
    no_prompt_id: int
    #: Pairs of models that share fewer than ``min_overlap`` prompts (not measured).
    too_few: int
    draw_rate: float
    params: ComplementarityParams

    def to_json(self) -> dict:
        return {
            "arena": self.arena,
            "pairs": [_finite(asdict(p)) for p in self.pairs],
            "models": [_finite(asdict(m)) for m in self.models],
            "votes_used": self.votes_used, "prompts": self.prompts,
            "no_prompt_id": self.no_prompt_id, "too_few": self.too_few,
            "draw_rate": self.draw_rate, "settings": asdict(self.params),
        }  # fmt: skip


def complementarity_report(votes, arena: str, params: ComplementarityParams | None = None,
                           *, rng: np.random.Generator | None = None) -> ComplementarityReport:  # fmt: skip
    """The complementarity of ``arena``'s models from a :class:`~arena_core.votes.clean.VoteTable`."""
    params = params or ComplementarityParams()
    frame = counted_frame(votes, arena, voter_kind="human")
    has_prompt = frame["prompt_id"].notna() & (frame["prompt_id"] != "")
    no_prompt_id = int((~has_prompt).sum())
    frame = frame[has_prompt]
    models = sorted(set(frame["model_a"]) | set(frame["model_b"]))
    index = {m: k for k, m in enumerate(models)}
    prompt, prompt_ids = pd.factorize(frame["prompt_id"])
    data = PromptVotes.from_arrays(
        frame["model_a"].map(index).to_numpy(int), frame["model_b"].map(index).to_numpy(int),
        frame["vote"].map(OUTCOME_CODES).to_numpy(int), prompt)  # fmt: skip
    result = complementarity(len(models), data, params, rng=rng)
    return ComplementarityReport(arena, _pair_rows(result, models), _model_rows(result, models),
                                 len(frame), len(prompt_ids), no_prompt_id, result.too_few,
                                 result.draw_rate, params)  # fmt: skip


def _pair_rows(result: Complementarity, models: list[str]) -> tuple[PairRow, ...]:
    rows = [PairRow(models[p.a], models[p.b], p.overlap,
                    None if math.isnan(p.spearman) else p.spearman, p.oracle_gain, p.gain_low,
                    p.gain_high, p.flagged, p.naive_gain, p.noise_gain, p.p_value)
            for p in result.pairs]  # fmt: skip
    return tuple(sorted(rows, key=lambda r: (-r.oracle_gain, r.model_a, r.model_b)))


def _model_rows(result: Complementarity, models: list[str]) -> tuple[ModelRow, ...]:
    return tuple(ModelRow(m, float(result.field_score[k]), int((result.votes[k] > 0).sum()),
                          int(result.votes[k].sum()))
                 for k, m in enumerate(models))  # fmt: skip


def _finite(row: dict) -> dict:
    """NaN as None (JSON has no NaN; a constant score column has no Spearman)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
