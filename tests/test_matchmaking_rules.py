"""Operator rules for matchmaking: the registry keys, strictly validated, and what they do to draws."""

import textwrap
from collections import Counter

import numpy as np
import pytest

from arena_core.matchmaking import (
    MatchParams,
    NoPairError,
    Rules,
    draw_pair,
    fisher_covariance,
    snapshot,
)
from arena_core.registry import RegistryError, load_registry
from arena_core.simulation.arena import SimArena
from arena_core.simulation.matchmaking import Setup
from arena_core.simulation.synthetic import Truth
from arena_core.space.pairing import rules_for

ARENA = """
arenas:
  - id: speech
    title: Speech
    modality: audio
    prompts: [{id: p1, text: Hello.}]
    never_paired: [[v1, v2]]
    models:
      - {id: v1, name: Voice 1, backend: {type: espeak, voice: en}}
      - {id: v2, name: Voice 1 again, backend: {type: espeak, voice: en}}
      - {id: w, name: Other, backend: {type: espeak, voice: en}, weight: 3}
"""


def load(tmp_path, text):
    path = tmp_path / "registry.yaml"
    path.write_text(textwrap.dedent(text))
    return load_registry(path)


def test_weight_and_never_paired_load(tmp_path):
    arena = load(tmp_path, ARENA).arena("speech")
    assert arena.never_paired == (("v1", "v2"),)
    assert arena.model("w").weight == 3.0 and arena.model("v1").weight == 1.0


BAD = [
    # (edit to ARENA, field, words in the message)
    (("weight: 3", "weight: 0"), "weight", "above 0"),
    (("weight: 3", "weight: -2"), "weight", "above 0"),
    (("weight: 3", "weight: 101"), "weight", "at most 100"),
    (("weight: 3", "weight: .inf"), "weight", "at most 100"),
    (("weight: 3", "weight: lots"), "weight", "must be a number"),
    (("weight: 3", "weight: true"), "weight", "must be a number"),
    (("[[v1, v2]]", "[[v1, nobody]]"), "never_paired[0]", "'nobody' is not a model"),
    (("[[v1, v2]]", "[[v1]]"), "never_paired[0]", "at least two different"),
    (("[[v1, v2]]", "[[v1, v1]]"), "never_paired[0]", "at least two different"),
    (("[[v1, v2]]", "[v1, v2]"), "never_paired[0]", "at least two different"),
    (("[[v1, v2]]", "v1"), "never_paired", "must be a list of groups"),
    (("[[v1, v2]]", "[[v1, v2], [w, v1], [w, v2]]"), "never_paired", "no pair of models"),
    (("[[v1, v2]]", "[[v1, v2, w]]"), "never_paired", "no pair of models"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "field", "words"), BAD)
def test_bad_matchmaking_keys_are_refused_precisely(tmp_path, edit, field, words):
    old, new = edit
    assert old in ARENA
    with pytest.raises(RegistryError) as err:
        load(tmp_path, ARENA.replace(old, new, 1))
    assert err.value.arena == "speech" and err.value.field == field
    assert words in str(err.value)


def test_weight_is_a_model_key_and_never_paired_an_arena_key(tmp_path):
    misplaced = ARENA.replace("    never_paired: [[v1, v2]]\n", "").replace(
        "weight: 3}", "weight: 3, never_paired: [[v1, v2]]}"
    )
    with pytest.raises(RegistryError, match="unknown key") as err:
        load(tmp_path, misplaced)
    assert err.value.model == "w" and err.value.field == "never_paired"


def test_rules_follow_the_registry(tmp_path):
    arena = load(tmp_path, ARENA).arena("speech")
    rules = rules_for(arena, {"v1": 0, "v2": 1, "w": 2})
    assert rules.weights.tolist() == pytest.approx([1 / 3, 1 / 3, 1.0])  # relative to the largest
    assert rules.blocked.tolist() == [
        [True, True, False],
        [True, True, False],
        [False, False, True],
    ]


def fresh_snapshot(n):
    battles = np.zeros((n, n))
    ratings = np.full(n, 1000.0)
    return snapshot(ratings, fisher_covariance(ratings, battles), battles), battles


def test_never_paired_models_never_meet_and_no_allowed_pair_is_an_error():
    snap, battles = fresh_snapshot(4)
    rules = Rules.build(4, never=[[0, 1], [2, 3]])
    rng = np.random.default_rng(3)
    pairs = Counter(
        frozenset(draw_pair(snap, battles, range(4), rng, rules=rules)) for _ in range(400)
    )
    assert set(pairs) == {frozenset(p) for p in [(0, 2), (0, 3), (1, 2), (1, 3)]}
    with pytest.raises(NoPairError):
        draw_pair(snap, battles, [0, 1], rng, rules=rules)


def test_a_newcomer_never_meets_a_model_it_must_never_be_paired_with():
    """``never_paired`` holds on a newcomer's draws too: a new voice kept apart from model 0
    (say, another build of the same engine) is explored against every other model, never 0."""
    battles = np.full((5, 5), 15.0)
    np.fill_diagonal(battles, 0)
    battles[4] = battles[:, 4] = 0  # model 4 is new
    ratings = np.full(5, 1000.0)
    snap = snapshot(ratings, fisher_covariance(ratings, battles), battles)
    rules = Rules.build(5, never=[[0, 4]])
    rng = np.random.default_rng(4)
    params = MatchParams(newcomer_share=1.0)  # every draw is the newcomer's
    pairs = Counter(
        frozenset(draw_pair(snap, battles, range(5), rng, rules=rules, params=params))
        for _ in range(300)
    )
    assert set(pairs) == {frozenset((4, k)) for k in (1, 2, 3)}


def test_with_nothing_left_to_learn_pairs_follow_the_rules_and_weights():
    """When no pair is worth a vote any more (a board known exactly: zero covariance, so
    every ranking and interval value is 0), any allowed pair is drawn, in proportion to
    ``w_i * w_j``: pairs kept apart still never meet, nobody meets itself, weights still count."""
    battles = np.full((4, 4), 500.0)
    np.fill_diagonal(battles, 0)
    snap = snapshot(np.array([1000.0, 1100, 1200, 1300]), np.zeros((4, 4)), battles)
    assert not snap.rank.any() and not snap.interval.any()
    rules = Rules.build(4, weights=[3, 1, 1, 1], never=[[0, 1]])
    rng = np.random.default_rng(8)
    draws = Counter(
        frozenset(draw_pair(snap, battles, range(4), rng, rules=rules)) for _ in range(3000)
    )
    # Allowed pairs and their w_i * w_j: 0-2 and 0-3 weigh 3, 1-2, 1-3 and 2-3 weigh 1 (of 9).
    expected = {(0, 2): 3 / 9, (0, 3): 3 / 9, (1, 2): 1 / 9, (1, 3): 1 / 9, (2, 3): 1 / 9}
    assert set(draws) == {frozenset(p) for p in expected}
    for p, share in expected.items():
        assert draws[frozenset(p)] / 3000 == pytest.approx(share, abs=0.03), p


def test_a_weighted_model_is_drawn_in_proportion_to_its_weight():
    # With nothing learned yet every pair is worth the same, so pair odds are w_i * w_j:
    # for weights (3, 1, 1, 1) model 0 is in (3+3+3) / (3+3+3+1+1+1) = 3/4 of the draws.
    snap, battles = fresh_snapshot(4)
    rules = Rules.build(4, weights=[3, 1, 1, 1])
    rng = np.random.default_rng(5)
    draws = [draw_pair(snap, battles, range(4), rng, rules=rules) for _ in range(4000)]
    share = np.mean([0 in d for d in draws])
    assert share == pytest.approx(0.75, abs=0.025)


def test_rules_refuse_bad_weights():
    with pytest.raises(ValueError, match="3 positive numbers"):
        Rules.build(3, weights=[1, 0, 1])
    with pytest.raises(ValueError, match="3 positive numbers"):
        Rules.build(3, weights=[1, 1])


def test_equal_tiny_weights_change_nothing():
    """Weights are relative: every model at 1e-170 once gave pair weights of 0 (underflow),
    and every draw failed with NoPairError."""
    snap, battles = fresh_snapshot(4)
    for scale in (1.0, 1e-170, 1e150):
        rules = Rules.build(4, weights=[scale] * 4)
        assert np.array_equal(rules.weights, np.ones(4)) and rules.pair_weight.sum() == 12
        draw_pair(snap, battles, range(4), np.random.default_rng(0), rules=rules)


def _simulated(truth, votes: int, seed: int, rules=None):
    """The simulation's engine (refit every 25 votes, the sampler as the Space runs it) on
    a board with the given true ratings."""
    setup = Setup(models=len(truth), votes=votes)
    arena = SimArena(setup, "matchmaking", seed, rules=rules,
                     truth=Truth(np.asarray(truth, dtype=float), draw_rate=setup.draw_rate))  # fmt: skip
    while arena.t < votes:
        arena.refit()
        arena.play(min(setup.match.refit_votes, votes - arena.t))
    return arena


def _battles(arena, start: int, stop: int | None = None) -> np.ndarray:
    n = arena.setup.models
    a, b = arena.a[start:stop], arena.b[start:stop]
    return np.bincount(a, minlength=n) + np.bincount(b, minlength=n)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_models_weight_sets_its_share_of_battles_once_the_board_settles(seed):
    """``weight: 2`` means twice the usual share (the registry's documentation). Applied to
    the pairs alone, the interval goal undid it: with the board settled the model of weight
    2 had 1.3 times a weight-1 model's battles and the model of weight 0.5 the same as one."""
    weights = np.array([2.0] + [1.0] * 8 + [0.5])
    arena = _simulated(1000 + np.linspace(-200, 200, 10), 6000, seed, Rules.build(10, weights))
    per = _battles(arena, 3000)
    share = per / per[1:9].mean()
    assert share[0] >= 1.7 and share[9] <= 0.75, share


def test_no_model_gets_over_cap_times_its_share_however_much_its_votes_are_worth():
    """A hopeless model 2,800 points under the rest: its battles teach little, so its interval
    stays the widest and the interval goal chose it in 93% of the battles (4.7 times its
    share over a window) while the cap, a discount on its odds, promised 2.5."""
    arena = _simulated(np.r_[np.linspace(800, 1200, 9), -2000.0], 4000, 0)
    params, n = arena.setup.match, arena.setup.models
    due = 2.0 / n * params.window  # battles per window a model of weight 1 is due
    for start in range(1000, 4000 - params.window + 1, 50):
        per = _battles(arena, start, start + params.window)
        assert per.max() <= params.cap * due + 1, (start, per)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_weight_heavier_than_all_others_together_leaves_the_others_their_floor(seed):
    """Weights 100, 1, 1, 1 (the registry allows up to 100): the heavy model can be in every
    battle at most, so the three others share the other side, a third of the battles each.
    The exposure rules took each one's share as ``2 w / sum w``, 0.019 battles a vote, so
    their floor was 0.012 (3 battles in 250 votes) and a model of weight 1 fell to 13-23
    battles in a 250-vote window (0.05-0.09 a vote) beside peers of the same weight at 0.3
    to 0.5, in 5 of 6 seeds (truth 900-1,100 points). Their floor is 0.6 of a third: over
    every full window after the first 500 votes each keeps at least 0.15 a vote, and the
    heavy model is still in nearly every battle."""
    arena = _simulated(np.linspace(900, 1100, 4), 2500, seed, Rules.build(4, [100, 1, 1, 1]))
    window = arena.setup.match.window
    fewest = np.min([_battles(arena, s, s + window) for s in range(500, 2500 - window + 1, 50)],
                    axis=0)  # fmt: skip
    assert fewest[1:].min() >= 0.15 * window, fewest
    assert _battles(arena, 500)[0] >= 0.85 * 2000
