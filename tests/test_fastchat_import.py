"""FastChat clean_battle exports: the two real MTEB Arena logs in tests/data."""

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.votes import reasons
from arena_core.votes.read import read_votes

DATA = Path(__file__).resolve().parent / "data"

# Battle and outcome counts as documented in tests/data/README.md. The
# clustering log holds one battle of a model against itself (a tie of
# multilingual-e5-large-instruct), which no rating can use: it is skipped and
# counted, so 123 of its 124 battles are read.
EXPORTS = {
    "fastchat_clean_battle_sts.json": (137, {"a": 43, "b": 41, "tie": 46, "both_bad": 7}, {}),
    "fastchat_clean_battle_clustering.json": (
        124,
        {"a": 41, "b": 39, "tie": 37, "both_bad": 7},
        {reasons.SAME_MODEL: 1},
    ),
}


@pytest.mark.parametrize(("name", "expected"), EXPORTS.items())
def test_real_exports_import_with_the_right_counts(name, expected):
    battles, outcomes, skipped = expected
    votes = read_votes(DATA / name)
    assert len(votes) + sum(votes.skipped.values()) == battles
    assert votes.skipped == skipped
    counted = Counter(votes.column("vote").to_pylist())
    if skipped:
        counted["tie"] += 1  # the self-battle was a tie
    assert counted == outcomes
    assert set(votes.column("arena").to_pylist()) == {"fastchat"}
    first = min(json.loads((DATA / name).read_text()), key=lambda b: b["tstamp"])
    assert votes.column("model_a")[0].as_py() == first["model_a"]


def test_importing_the_same_export_twice_deduplicates():
    path = DATA / "fastchat_clean_battle_sts.json"
    votes = read_votes([path, path])
    assert len(votes) == 137
    assert votes.skipped == {reasons.DUPLICATE: 137}


def test_non_anonymous_battles_are_skipped_unless_asked(tmp_path):
    battles = json.loads((DATA / "fastchat_clean_battle_sts.json").read_text())
    for b in battles[:10]:
        b["anony"] = False
    battles.append(
        {"model_a": "x", "model_b": "y", "winner": "model_c", "tstamp": 1.0, "anony": True}
    )
    battles.append({"model_a": 3, "model_b": "y", "winner": "tie", "tstamp": 1.0, "anony": True})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(battles))
    votes = read_votes(path)
    assert len(votes) == 127
    assert votes.skipped == {reasons.NOT_ANONY: 10, reasons.BAD_VOTE: 1, reasons.WRONG_TYPE: 1}
    assert len(read_votes(path, fastchat_all=True)) == 137


def test_sts_board_matches_the_published_leaderboard_order():
    """The MTEB Arena published this board from the same log with FastChat's scripts.

    FastChat's ``compute_elo_mle_with_tie`` fits scikit-learn's default
    LogisticRegression, which adds an L2 penalty (C=1): on 137 battles that
    pulls extreme ratings a few points towards 1000, so our unpenalised MLE
    (prior_weight 0) agrees in order and to within ~10 points, not exactly.
    """
    with (DATA / "fastchat_sts_leaderboard.csv").open() as f:
        published = {
            row["key"]: float(row["Arena Elo rating (anony)"]) for row in csv.DictReader(f)
        }
    votes = read_votes(DATA / "fastchat_clean_battle_sts.json")
    board = board_from_votes(
        votes, "fastchat", params=BoardParams(prior_weight=0, bootstrap_rounds=0)
    )
    ours = {r.model_id: r.rating for r in board.rows}
    assert set(ours) == set(published)
    names = sorted(published)
    rho = spearmanr([ours[n] for n in names], [published[n] for n in names]).statistic
    assert rho == pytest.approx(1.0)
    gaps = np.array([ours[n] - published[n] for n in names])
    assert np.abs(gaps).max() < 10
    # The penalty shrinks: our spread is wider than the published one.
    assert np.std([ours[n] for n in names]) > np.std([published[n] for n in names])
