"""Descriptive measures of a judge against the human votes: counts and shares, no model fitted.

Everything takes a :class:`VoteArrays` (integer model indices, outcome codes;
:func:`vote_arrays` builds them from the vote rows) and the index of the judge, ``HUMAN`` for the visitors. A vote is read in model
terms through its *class* on the unordered pair: 0 when the pair's lower-index
model wins, 1 when the other wins, 2 for a tie or both-bad ("no preference":
both count half a win in the boards, so they are one class here too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena_core.ratings.counts import A_WINS, B_WINS, OUTCOME_CODES, OUTCOME_NAMES, SCORE_A

#: Judge index of a human vote.
HUMAN = -1
#: Vote classes on an unordered pair.
LOW_WINS, HIGH_WINS, NO_PREFERENCE = 0, 1, 2


@dataclass(frozen=True)
class VoteArrays:
    """Cleaned votes as parallel arrays.

    ``judge`` is the judge's index or :data:`HUMAN`; ``battle`` and ``prompt``
    are integer codes (-1 when unknown); durations are seconds, NaN when unknown.
    """

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    judge: np.ndarray
    battle: np.ndarray
    prompt: np.ndarray
    duration_a: np.ndarray
    duration_b: np.ndarray

    def select(self, keep) -> VoteArrays:
        return VoteArrays(*(getattr(self, f)[keep] for f in self.__dataclass_fields__))

    def vote_class(self) -> np.ndarray:
        """Each vote's class on its unordered pair (see the module docstring)."""
        a_low = self.a < self.b
        cls = np.full(len(self.a), NO_PREFERENCE)
        cls[(self.outcome == A_WINS) & a_low | (self.outcome == B_WINS) & ~a_low] = LOW_WINS
        cls[(self.outcome == A_WINS) & ~a_low | (self.outcome == B_WINS) & a_low] = HIGH_WINS
        return cls

    def pair(self, n_items: int) -> np.ndarray:
        """A code for each vote's unordered pair."""
        return np.minimum(self.a, self.b) * n_items + np.maximum(self.a, self.b)


def vote_arrays(votes: pd.DataFrame) -> tuple[VoteArrays, list[str], list[str], dict[str, int]]:
    """Clean rows as arrays, the model and judge ids (sorted), and rows skipped by reason."""
    frame = votes.reset_index(drop=True)

    def column(name):
        return frame[name] if name in frame else pd.Series([None] * len(frame), dtype=object)

    kind = column("voter_kind").fillna("human")
    checks = {
        "vote": column("vote").isin(OUTCOME_NAMES),
        "models": column("model_a").notna()
        & column("model_b").notna()
        & (column("model_a") != column("model_b")),
        "voter_kind": kind.isin(["human", "judge"]),
        "judge": (kind != "judge") | column("judge").notna(),
    }
    keep = pd.Series(True, index=frame.index)
    skipped = {}
    for reason, ok in checks.items():
        skipped[reason] = int((keep & ~ok).sum())
        keep &= ok
    frame, kind = frame[keep], kind[keep]
    models = sorted(set(frame["model_a"]) | set(frame["model_b"])) if len(frame) else []
    index = {m: i for i, m in enumerate(models)}
    is_judge = (kind == "judge").to_numpy()
    judges = sorted(set(frame.loc[is_judge, "judge"]))
    judge_index = {jd: i for i, jd in enumerate(judges)}
    judge = np.where(is_judge, [judge_index.get(x, HUMAN) for x in column("judge")[keep]], HUMAN)
    arrays = VoteArrays(
        frame["model_a"].map(index).to_numpy(np.int64), frame["model_b"].map(index).to_numpy(np.int64),
        frame["vote"].map(OUTCOME_CODES).to_numpy(np.int64),
        judge.astype(np.int64), pd.factorize(column("battle_id")[keep])[0].astype(np.int64),
        pd.factorize(column("prompt_id")[keep])[0].astype(np.int64),
        pd.to_numeric(column("model_a_duration_s")[keep], errors="coerce").to_numpy(float),
        pd.to_numeric(column("model_b_duration_s")[keep], errors="coerce").to_numpy(float),
    )  # fmt: skip
    return arrays, models, judges, {k: v for k, v in skipped.items() if v}


@dataclass(frozen=True)
class Agreement:
    """How often a judge's verdict matches a human vote on the same item.

    ``share`` is the mean, over the judge's verdicts that have human votes to
    compare with, of the share of those human votes in the verdict's class;
    that is, the chance that the verdict and a human vote drawn at random from
    the same item agree. ``chance`` is the same for a judge that kept its own
    rates of decisive and no-preference verdicts but picked the winning model by
    a coin flip: ``d (h_low + h_high) / 2 + t h_none`` per verdict, with ``d`` and
    ``t`` the judge's shares and ``h`` the humans' on the item. ``verdicts`` is
    how many verdicts were compared (None shares when zero).
    """

    share: float | None
    chance: float | None
    verdicts: int


def agreement(votes: VoteArrays, judge: int, n_items: int) -> tuple[Agreement, Agreement]:
    """Agreement with humans on the same (pair, prompt), and, for the judge's other
    verdicts, on the same pair whatever the prompt (see :class:`Agreement`)."""
    cls, pair = votes.vote_class(), votes.pair(n_items)
    human, mine = votes.judge == HUMAN, votes.judge == judge
    decisive = float(np.mean(cls[mine] != NO_PREFERENCE)) if mine.any() else 0.0
    frame = pd.DataFrame({"pair": pair, "prompt": votes.prompt, "cls": cls})
    by_prompt = _class_shares(frame[human & (votes.prompt >= 0)], ["pair", "prompt"])
    by_pair = _class_shares(frame[human], ["pair"])
    # Humans' votes with an unknown prompt (-1) are not in by_prompt, so they never match here.
    verdicts = frame[mine].merge(by_prompt, on=["pair", "prompt"], how="left")
    same = verdicts["h_low"].notna()
    rest = verdicts.loc[~same, ["pair", "prompt", "cls"]].merge(by_pair, on=["pair"])
    return _agreement(verdicts[same], decisive), _agreement(rest, decisive)


def _class_shares(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    counts = frame.groupby([*keys, "cls"]).size().unstack("cls", fill_value=0)
    counts = counts.reindex(columns=[LOW_WINS, HIGH_WINS, NO_PREFERENCE], fill_value=0)
    shares = counts.div(counts.sum(axis=1), axis=0)
    shares.columns = ["h_low", "h_high", "h_none"]
    return shares.reset_index()


def _agreement(matched: pd.DataFrame, decisive: float) -> Agreement:
    if matched.empty:
        return Agreement(None, None, 0)
    h = matched[["h_low", "h_high", "h_none"]].to_numpy()
    share = h[np.arange(len(h)), matched["cls"].to_numpy()]
    chance = decisive * (h[:, 0] + h[:, 1]) / 2.0 + (1.0 - decisive) * h[:, 2]
    return Agreement(float(share.mean()), float(chance.mean()), len(h))


def position_shares(votes: VoteArrays, judge: int) -> tuple[float | None, float | None, int]:
    """``(flip_share, a_share, paired)`` of a judge's verdicts.

    A battle is *paired* when the judge has exactly two verdicts on it with the
    models swapped. ``flip_share`` is the share of paired battles whose two
    verdicts are decisive and pick the same side (so different models: the
    verdict followed the order, not the clips). ``a_share`` is the share of all
    the judge's decisive verdicts that went to side A: 1/2 without position bias,
    since each battle is shown both ways.
    """
    mine = votes.judge == judge
    out = votes.outcome[mine]
    decisive = (out == A_WINS) | (out == B_WINS)
    a_share = float(np.mean(out[decisive] == A_WINS)) if decisive.any() else None
    frame = pd.DataFrame({"battle": votes.battle[mine], "a": votes.a[mine], "b": votes.b[mine],
                          "wa": out == A_WINS, "wb": out == B_WINS})[votes.battle[mine] >= 0]  # fmt: skip
    g = frame.groupby("battle").agg(rows=("a", "size"), a0=("a", "first"), a1=("a", "last"),
                                    b0=("b", "first"), b1=("b", "last"), wa=("wa", "sum"),
                                    wb=("wb", "sum"))  # fmt: skip
    paired = g[(g["rows"] == 2) & (g["a0"] == g["b1"]) & (g["b0"] == g["a1"])]
    if paired.empty:
        return None, a_share, 0
    same_side = (paired["wa"] == 2) | (paired["wb"] == 2)
    return float(same_side.mean()), a_share, len(paired)


def self_shares(votes: VoteArrays, judge: int, in_family: np.ndarray,
                n_items: int) -> tuple[float | None, float | None, int]:  # fmt: skip
    """``(judge_share, human_share, verdicts)`` on pairs with exactly one model of the
    judge's family (``in_family``: a mask over models).

    ``judge_share`` is the judge's mean score for the family model (a tie half);
    ``human_share`` the humans' mean score for it on the same pair, averaged over
    the same verdicts, so both are weighted alike. Verdicts on pairs no human
    voted on are left out.
    """
    score_a = np.asarray(SCORE_A)[votes.outcome]
    fam_a, fam_b = in_family[votes.a], in_family[votes.b]
    one = fam_a != fam_b
    fam_score = np.where(fam_a, score_a, 1.0 - score_a)
    pair = votes.pair(n_items)
    human = (votes.judge == HUMAN) & one
    h_mean = pd.Series(fam_score[human]).groupby(pair[human]).mean()
    mine = (votes.judge == judge) & one & np.isin(pair, h_mean.index.to_numpy())
    if not mine.any():
        return None, None, 0
    judged = fam_score[mine]
    humans = h_mean.reindex(pair[mine]).to_numpy()
    return float(judged.mean()), float(humans.mean()), int(mine.sum())


def longer_share(votes: VoteArrays, judge: int) -> tuple[float | None, int]:
    """Share of decisive votes (of ``judge``, or of humans) that went to the longer clip,
    over votes whose two durations are known and differ; with their number."""
    who = votes.judge == judge
    known = np.isfinite(votes.duration_a) & np.isfinite(votes.duration_b)
    differ = known & (votes.duration_a != votes.duration_b)
    decisive = (votes.outcome == A_WINS) | (votes.outcome == B_WINS)
    rows = who & differ & decisive
    if not rows.any():
        return None, 0
    a_longer = votes.duration_a[rows] > votes.duration_b[rows]
    a_won = votes.outcome[rows] == A_WINS
    return float(np.mean(a_longer == a_won)), int(rows.sum())
