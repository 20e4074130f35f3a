"""Pair counts with each battle counted once (``battle_counts``): hand-worked tallies."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from arena_core.ratings.counts import (
    A_WINS,
    B_WINS,
    BOTH_BAD,
    TIE,
    battle_counts,
    count_pairs,
    own_battles,
)


def test_one_vote_battles_are_counted_as_count_pairs_counts_them():
    a, b = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
    outcome = np.array([A_WINS, BOTH_BAD, TIE, B_WINS])
    plain = count_pairs(3, a, b, outcome)
    clustered = battle_counts(3, a, b, outcome, np.array([0, 1, -1, -1]))
    for field in ("wins", "ties", "both_bad"):
        assert np.array_equal(getattr(clustered, field), getattr(plain, field)), field


def test_a_battles_verdicts_become_one_vote_with_their_mean_score():
    # Battle 0: mirrored (model 0 wins in both orders): one win for 0.
    # Battle 1: the verdicts split (side A both times): one tie.
    # Battle 2: model 1 wins once, a tie once: mean score 3/4 for 1, half a win and half a tie.
    a = np.array([0, 1, 0, 1, 1, 2])
    b = np.array([1, 0, 1, 0, 2, 1])
    outcome = np.array([A_WINS, B_WINS, A_WINS, A_WINS, A_WINS, TIE])
    counts = battle_counts(3, a, b, outcome, np.array([0, 0, 1, 1, 2, 2]))
    wins = np.zeros((3, 3))
    wins[0, 1], wins[1, 2] = 1.0, 0.5
    ties = np.zeros((3, 3))
    ties[0, 1] = ties[1, 0] = 1.0
    ties[1, 2] = ties[2, 1] = 0.5
    assert np.allclose(counts.wins, wins) and np.allclose(counts.ties, ties)
    assert counts.total() == 3.0


def test_a_battle_weighs_its_votes_mean_weight():
    counts = battle_counts(2, np.array([0, 1]), np.array([1, 0]), np.array([A_WINS, B_WINS]),
                           np.array([7, 7]), np.array([0.5, 0.25]))  # fmt: skip
    assert counts.wins[0, 1] == 0.375 and counts.total() == 0.375


@given(st.lists(st.integers(min_value=-1, max_value=6), max_size=30))
def test_a_vote_without_a_battle_id_is_a_battle_of_its_own(codes):
    """Known battle codes stay; each -1 gets a code of its own, shared with no other vote."""
    codes = np.asarray(codes, dtype=np.int32)
    own = own_battles(codes)
    known = codes >= 0
    assert np.array_equal(own[known], codes[known])
    alone = own[~known]
    assert len(set(alone)) == len(alone) and not set(alone) & set(codes[known])
