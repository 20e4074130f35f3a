"""Operator rules for matchmaking: the registry keys, strictly validated, and what they do to draws."""

import textwrap
from collections import Counter

import numpy as np
import pytest

from arena_core.matchmaking import NoPairError, Rules, draw_pair, fisher_covariance, snapshot
from arena_core.registry import RegistryError, load_registry
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
    assert rules.weights.tolist() == [1.0, 1.0, 3.0]
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
