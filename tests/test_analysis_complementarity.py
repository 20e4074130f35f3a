"""Per-prompt complementarity, the pure functions: hand-worked numbers and properties. The
statistical claims (flag rates, coverage) are in test_simulation_complementarity.py."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.analysis.complementarity import (
    ComplementarityParams,
    PromptVotes,
    complementarity,
    field_scores,
    oracle_gain,
    rest_of_field,
)

scores = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30)


def definition(s_i, s_j) -> float:
    """The oracle gain as the issue defines it: mean of the per-prompt max minus the better mean."""
    s_i, s_j = np.asarray(s_i), np.asarray(s_j)
    return float(np.maximum(s_i, s_j).mean() - max(s_i.mean(), s_j.mean()))


@given(scores, st.data())
def test_the_oracle_gain_is_the_definition_symmetric_non_negative_and_blind_to_prompt_order(
    s_i, data
):
    s_j = data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(s_i), max_size=len(s_i)))
    gain = oracle_gain(s_i, s_j)
    assert gain == pytest.approx(definition(s_i, s_j), abs=1e-12)
    assert gain == pytest.approx(oracle_gain(s_j, s_i), abs=1e-12)
    assert gain >= -1e-12
    order = data.draw(st.permutations(range(len(s_i))))
    assert oracle_gain(np.asarray(s_i)[order], np.asarray(s_j)[order]) == pytest.approx(
        gain, abs=1e-12
    )


@given(scores, st.floats(-0.5, 0.5))
def test_a_constant_gap_leaves_nothing_to_gain(s_i, gap):
    assert oracle_gain(s_i, np.asarray(s_i) + gap) == pytest.approx(0.0, abs=1e-12)


def test_the_oracle_gain_on_hand_worked_scores():
    # i is better on prompts 1 and 2, j on prompt 3; both average 0.6. Picking the better on
    # each prompt averages (0.7 + 0.7 + 0.8) / 3 = 0.7333: a gain of 0.4 / 3.
    s_i, s_j = [0.7, 0.7, 0.4], [0.5, 0.5, 0.8]
    assert oracle_gain(s_i, s_j) == pytest.approx(0.4 / 3)
    with pytest.raises(ValueError, match="no prompts"):
        oracle_gain([], [])


def test_the_field_and_the_rest_of_the_field_on_hand_worked_strengths():
    theta = np.array([0.0, np.log(3.0), -np.log(3.0), 5.0])  # model 3 never played
    played = np.array([True, True, True, False])
    # P(0 beats 1) = 1/4, P(0 beats 2) = 3/4, P(1 beats 2) = 9/10.
    field = field_scores(theta, played)
    assert field[:3] == pytest.approx([(0.25 + 0.75) / 2, (0.75 + 0.9) / 2, (0.25 + 0.1) / 2])
    assert np.isnan(field[3])
    rest = rest_of_field(theta, played)
    assert rest[0, 1] == pytest.approx(0.75) and rest[1, 0] == pytest.approx(0.9)
    assert rest[0, 2] == pytest.approx(0.25) and rest[2, 1] == pytest.approx(0.25)
    assert np.isnan(rest[0, 3])


def balanced_votes():
    """Three models of equal strength (each pair's wins, a tie counting half, balance), on
    three prompts. The fit puts them level, so every expectation is 1/2.

    Against model 2: prompt 0, 0 beat 2 and 2 beat 1; prompt 1, 2 beat 0 twice and 1 beat 2;
    prompt 2, 0 beat 2 and tied it once, 1 beat 2 once and lost once. Between 0 and 1 (left
    out of their pair's scores) two wins each, on prompt 0.
    """
    a = [0, 2, 2, 2, 1, 0, 0, 1, 2, 0, 1, 1, 0]
    b = [2, 1, 0, 0, 2, 2, 2, 2, 1, 1, 0, 0, 1]
    outcome = [0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 1]
    prompt = [0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0]
    return PromptVotes.from_arrays(a, b, outcome, prompt)


def test_pair_scores_against_the_rest_of_the_field_by_hand():
    params = ComplementarityParams(min_overlap=3, rounds=99)
    result = complementarity(3, balanced_votes(), params, rng=np.random.default_rng(0))
    assert result.field_score == pytest.approx([0.5, 0.5, 0.5], abs=1e-9)
    # From all its votes, model 0 scores: prompt 0, won 3 of 5 (+1/2 in residuals over 5);
    # prompt 1, lost both; prompt 2, a win and a tie.
    assert result.scores[0] == pytest.approx([0.5 + 0.5 / 5, 0.0, 0.75], abs=1e-9)
    assert result.votes[0].tolist() == [5, 2, 2]
    # Only (0, 1) shares 3 prompts through a third model: 0 met 1 on prompt 0 only, so (0, 2)
    # and (1, 2) share one prompt each.
    assert [(p.a, p.b) for p in result.pairs] == [(0, 1)] and result.too_few == 2
    pair = result.pairs[0]
    # Against model 2 only: s_0 = (1, 0, 0.75), s_1 = (0, 1, 0.5), so d = (1, -1, 0.25):
    # mean |d| = 0.75, mean d = 1/12, gain = (0.75 - 1/12) / 2 = 1/3; the ranks are reversed.
    assert pair.overlap == 3
    assert pair.naive_gain == pytest.approx(1 / 3, abs=1e-9)
    assert pair.spearman == pytest.approx(-1.0)
    assert pair.oracle_gain == pytest.approx(pair.naive_gain - pair.noise_gain)
    assert pair.gain_low <= pair.gain_high
    assert 0 < pair.p_value <= 1 and pair.flagged == (pair.p_value <= params.alpha)


@st.composite
def vote_sets(draw):
    n_models = draw(st.integers(3, 5))
    n_prompts = draw(st.integers(3, 6))
    n = draw(st.integers(20, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    return n_models, PromptVotes.from_arrays(
        a, b, rng.integers(0, 4, n), rng.integers(0, n_prompts, n)
    )


def stable(result):
    """What does not depend on the order the generator's draws are consumed in."""
    return {(p.a, p.b): (p.overlap, p.naive_gain, p.spearman) for p in result.pairs}


PARAMS = ComplementarityParams(min_overlap=2, rounds=19)


@settings(max_examples=25, deadline=None)
@given(vote_sets(), st.data())
def test_relabelling_models_prompts_or_sides_changes_nothing(case, data):
    n, votes = case
    base = stable(complementarity(n, votes, PARAMS))
    order = data.draw(st.permutations(range(n)))
    new = np.asarray(order)  # model k becomes new[k]
    relabelled = stable(complementarity(n, replace(votes, a=new[votes.a], b=new[votes.b]), PARAMS))
    back = {tuple(sorted((int(new[i]), int(new[j])))): v for (i, j), v in base.items()}
    assert relabelled.keys() == back.keys()
    for key, (overlap, gain, rho) in back.items():
        assert relabelled[key][0] == overlap
        assert relabelled[key][1] == pytest.approx(gain, abs=1e-9)
        assert relabelled[key][2] == pytest.approx(rho, abs=1e-9, nan_ok=True)
    prompts = np.asarray(data.draw(st.permutations(range(votes.n_prompts))))
    assert _close(
        stable(complementarity(n, replace(votes, prompt=prompts[votes.prompt]), PARAMS)), base
    )
    mirror = np.array([1, 0, 2, 3])[votes.outcome]  # a and b swapped, the outcome with them
    assert _close(
        stable(complementarity(n, replace(votes, a=votes.b, b=votes.a, outcome=mirror), PARAMS)),
        base,
    )


def _close(x, y) -> bool:
    return x.keys() == y.keys() and all(
        np.allclose(np.asarray(x[k], float), np.asarray(y[k], float), atol=1e-9, equal_nan=True)
        for k in x
    )


@settings(max_examples=25, deadline=None)
@given(vote_sets())
def test_gains_and_p_values_stay_in_their_ranges(case):
    n, votes = case
    result = complementarity(n, votes, PARAMS)
    for p in result.pairs:
        assert p.naive_gain >= -1e-12 and p.noise_gain >= -1e-12
        assert p.gain_low <= p.gain_high
        assert p.oracle_gain == pytest.approx(p.naive_gain - p.noise_gain)
        assert 1 / 20 <= p.p_value <= 1


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="different models"):
        PromptVotes.from_arrays([0], [0], [0], [0])
    with pytest.raises(ValueError, match="outcome"):
        PromptVotes.from_arrays([0], [1], [4], [0])
    with pytest.raises(ValueError, match="one entry per vote"):
        PromptVotes.from_arrays([0, 1], [1], [0], [0])
    with pytest.raises(ValueError, match="rounds"):
        ComplementarityParams(rounds=10, alpha=0.05)
    with pytest.raises(ValueError, match="out of range"):
        complementarity(2, PromptVotes.from_arrays([0], [2], [0], [0]))
    empty = complementarity(3, PromptVotes.from_arrays([], [], [], []))
    assert empty.pairs == () and empty.scores.shape == (3, 0)
