"""Sequential Elo: the K schedule, hand-computed steps, and replay/step identity."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arena_core.ratings.elo as elo_module
from arena_core.ratings import elo_kernel
from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, SCORE_A, TIE
from arena_core.ratings.elo import EloParams, EloState, sequential_elo

#: The health checks the suite's profile suppresses (tests/conftest.py): a test that names
#: its own list replaces the profile's, so it names these again (without too_slow, a busy
#: machine can trip it: Hypothesis calls data generation too slow past a wall-clock limit).
PROFILE_SUPPRESSES = tuple(settings.default.suppress_health_check)

#: Outcome seen from the other side: a win for a is a win for b once swapped.
SWAPPED = {A_WINS: B_WINS, B_WINS: A_WINS, TIE: TIE, BOTH_BAD: BOTH_BAD}


def votes_strategy(max_models=6, max_votes=60):
    @st.composite
    def build(draw):
        n = draw(st.integers(2, max_models))
        pairs = st.tuples(st.integers(0, n - 1), st.integers(1, n - 1), st.integers(0, 3))
        rows = draw(st.lists(pairs, max_size=max_votes))
        a = np.array([r[0] for r in rows], dtype=np.int64)
        b = np.array([(r[0] + r[1]) % n for r in rows], dtype=np.int64)
        outcome = np.array([r[2] for r in rows], dtype=np.int64)
        return n, a, b, outcome

    return build()


def test_k_schedule_matches_the_issue():
    p = EloParams()
    assert p.k(0) == 48.0
    assert p.k(15) == pytest.approx(30.0)  # halfway after K_HALF battles
    assert p.k(10_000) == pytest.approx(12.0, abs=0.06)


def test_first_vote_between_new_models_moves_each_by_k_over_two():
    state = EloState.start(2)
    step = state.step(0, 1, A_WINS)
    assert (step.before_a, step.before_b) == (1000.0, 1000.0)
    assert step.after_a == pytest.approx(1024.0)
    assert step.after_b == pytest.approx(976.0)
    assert state.battles == [1, 1]


def test_hand_computed_second_vote_uses_battle_counts():
    state = EloState(ratings=[1100.0, 1000.0, 1000.0], battles=[30, 0, 0])
    state.step(0, 1, TIE)
    expected = 1.0 / (1.0 + 10.0 ** ((1000.0 - 1100.0) / 400.0))
    k0 = 12 + 36 * 15 / (15 + 30)
    assert state.ratings[0] == pytest.approx(1100.0 + k0 * (0.5 - expected), abs=1e-9)
    assert state.ratings[1] == pytest.approx(1000.0 - 48.0 * (0.5 - expected), abs=1e-9)


def test_models_start_from_their_prior():
    state = sequential_elo(
        3, (np.array([0]), np.array([1]), np.array([A_WINS])), prior=[1200, 900, 1050]
    )
    assert state.ratings[2] == 1050.0
    e = 1 / (1 + math.pow(10, (900 - 1200) / 400))
    assert state.ratings[0] == pytest.approx(1200 + 48 * (1 - e))


@pytest.fixture(params=["python", "compiled"])
def replay_path(request, monkeypatch):
    """Run a test once with the plain-Python replay loop and once with the compiled one."""
    if request.param == "compiled":
        assert elo_kernel.available()  # llvmlite is a requirement: a skip would hide a break
        monkeypatch.setattr(elo_module, "COMPILED_FROM", 0)
    else:
        monkeypatch.setattr(elo_module, "compiled_replay", lambda: None)
    return request.param


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[*PROFILE_SUPPRESSES, HealthCheck.function_scoped_fixture],
)
@given(votes_strategy())
def test_replay_equals_one_step_at_a_time_bit_for_bit(replay_path, data):
    n, a, b, outcome = data
    replay = sequential_elo(n, (a, b, outcome))
    live = EloState.start(n)
    for i, j, o in zip(a, b, outcome, strict=True):
        live.step(int(i), int(j), int(o))
    assert replay.ratings == live.ratings  # exact: same arithmetic, same order
    assert replay.battles == live.battles


@settings(max_examples=60, deadline=None)
@given(votes_strategy())
def test_swapping_sides_with_the_outcome_changes_nothing(data):
    n, a, b, outcome = data
    swapped = np.array([SWAPPED[int(o)] for o in outcome], dtype=np.int64)
    one = sequential_elo(n, (a, b, outcome)).as_array()
    two = sequential_elo(n, (b, a, swapped)).as_array()
    np.testing.assert_allclose(one, two, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(votes_strategy(), st.data())
def test_an_extra_win_never_lowers_the_winner(data, extra):
    n, a, b, outcome = data
    winner = extra.draw(st.integers(0, n - 1))
    loser = (winner + extra.draw(st.integers(1, n - 1))) % n
    before = sequential_elo(n, (a, b, outcome)).as_array()
    after = sequential_elo(
        n, (np.append(a, winner), np.append(b, loser), np.append(outcome, A_WINS))
    )
    assert after.ratings[winner] > before[winner]
    assert after.ratings[loser] < before[loser]


def test_both_replay_loops_agree_bit_for_bit_on_a_long_log(monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 12, 200_000)
    b = (a + rng.integers(1, 12, 200_000)) % 12
    o = rng.integers(0, 4, 200_000)
    prior = rng.normal(1000, 50, 12)
    monkeypatch.setattr(elo_module, "COMPILED_FROM", 0)
    compiled = sequential_elo(12, (a, b, o), prior)
    monkeypatch.setattr(elo_module, "compiled_replay", lambda: None)
    plain = sequential_elo(12, (a, b, o), prior)
    assert compiled.ratings == plain.ratings and compiled.battles == plain.battles


@settings(max_examples=200, deadline=None)
@given(
    votes_strategy(max_models=8, max_votes=300),
    st.lists(st.floats(500, 1500), min_size=8, max_size=8),
    st.tuples(st.floats(1, 64), st.floats(1, 64), st.floats(0.5, 50)),
)
def test_the_plain_loop_equals_the_compiled_one_bit_for_bit(data, prior, schedule):
    # Which loop runs depends on the replay's length and on whether the loop is compiled
    # already, never the result: the same floats from both, for any priors and K schedule.
    n, a, b, outcome = data
    params = EloParams(*schedule)
    ratings = {}
    for name, compiled_from in (("compiled", 0), ("plain", 10**12)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(elo_module, "COMPILED_FROM", compiled_from)
            patch.setattr(elo_module, "COMPILED_WHEN_LOADED_FROM", compiled_from)
            ratings[name] = sequential_elo(n, (a, b, outcome), prior[:n], params).ratings
    assert ratings["compiled"] == ratings["plain"]


def test_a_short_one_off_replay_skips_compiling_and_a_long_one_compiles(monkeypatch):
    # Compiling costs what the plain loop spends on ~200,000 votes; once compiled in the
    # process (the Space replays again and again), a call costs microseconds.
    monkeypatch.setattr(elo_kernel, "compiled", lambda: False)
    assert not elo_module._worth_compiling(elo_module.COMPILED_FROM - 1)
    assert elo_module._worth_compiling(elo_module.COMPILED_FROM)
    monkeypatch.setattr(elo_kernel, "compiled", lambda: True)
    assert not elo_module._worth_compiling(elo_module.COMPILED_WHEN_LOADED_FROM - 1)
    assert elo_module._worth_compiling(elo_module.COMPILED_WHEN_LOADED_FROM)


def test_a_fresh_process_compiles_the_loop_for_a_long_replay_without_numba():
    """The point of the kernel: a researcher's one-off replay of a million votes runs the
    compiled loop without importing numba (0.6 to 1.1 s of start-up here)."""
    code = (
        "import sys, numpy as np\n"
        "from arena_core.ratings import elo, elo_kernel\n"
        "a = np.arange(300_000) % 5; b = (a + 1) % 5\n"
        "elo.sequential_elo(5, (a, b, np.zeros(300_000, np.int64)))\n"
        "print(elo_kernel.compiled(), 'numba' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout  # fmt: skip
    assert out.split() == ["True", "False"]


def test_the_compiled_loop_refuses_what_it_would_read_past():
    """The machine code reads memory unchecked: every index is checked before the call,
    and nothing moves when one is refused."""
    ratings, played = np.full(3, 1000.0), np.zeros(3, np.int64)
    k_table, scores = np.full(4, 32.0), np.array(SCORE_A)

    def call(a, b, o, k=k_table):
        elo_kernel.replay(ratings, played, k, np.array(a), np.array(b), np.array(o), scores, 0.01)

    for a, b, o, match in (([0], [3], [0], "model index"), ([-1], [1], [0], "model index"),
                           ([0], [1], [4], "outcome"), ([0, 1], [1], [0], "one entry"),
                           ([0] * 5, [1] * 5, [0] * 5, "K table")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            call(a, b, o)
    with pytest.raises(ValueError, match="float64"):
        elo_kernel.replay(ratings.astype(np.float32), played, k_table, np.array([0]),
                          np.array([1]), np.array([0]), scores, 0.01)  # fmt: skip
    for a, b, o, match in (([0], [0], [0], "itself"), ([0.9], [1], [0], "integer")):
        with pytest.raises(ValueError, match=match):
            call(a, b, o)
    frozen = np.full(3, 1000.0)
    frozen.flags.writeable = False  # e.g. np.frombuffer over bytes: it would be written to
    with pytest.raises(ValueError, match="writeable"):
        elo_kernel.replay(frozen, played, k_table, np.array([0]), np.array([1]), np.array([0]),
                          scores, 0.01)  # fmt: skip
    huge = np.array([2**63 - 1, 0, 0], np.int64)  # the sum with the votes' counts would wrap
    with pytest.raises(ValueError, match="K table"):
        elo_kernel.replay(ratings, huge, k_table, np.array([0]), np.array([1]), np.array([0]),
                          scores, 0.01)  # fmt: skip
    assert ratings.tolist() == [1000.0] * 3 and played.tolist() == [0] * 3
    call([0] * 4, [1] * 4, [0] * 4)  # exactly as many battles as the table has entries
    assert played.tolist() == [4, 4, 0]


def test_rating_points_are_conserved_when_k_is_equal():
    # Two models with the same battle count exchange exactly what one gains.
    state = sequential_elo(2, (np.array([0, 1, 0]), np.array([1, 0, 1]), np.array([0, 2, 1])))
    assert sum(state.ratings) == pytest.approx(2000.0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="itself"):
        sequential_elo(2, (np.array([0]), np.array([0]), np.array([0])))
    with pytest.raises(ValueError, match="out of range"):
        sequential_elo(2, (np.array([0]), np.array([2]), np.array([0])))
    with pytest.raises(ValueError, match="prior"):
        EloState.start(3, prior=[1000, 1000])


def test_the_plain_replay_reads_votes_a_chunk_at_a_time(monkeypatch):
    # Chunks of 3 votes (a million in production): every vote applied once, in order.
    monkeypatch.setattr(elo_module, "compiled_replay", lambda: None)
    monkeypatch.setattr(elo_module, "_CHUNK", 3)
    a, b = np.array([0, 1, 2, 0, 1, 2, 0, 3]), np.array([1, 2, 3, 3, 0, 1, 2, 1])
    outcome = np.array([0, 1, 2, 3, 0, 0, 1, 2])
    live = EloState.start(4)
    for i, j, o in zip(a, b, outcome, strict=True):
        live.step(int(i), int(j), int(o))
    assert sequential_elo(4, (a, b, outcome)).ratings == live.ratings


def test_votes_of_unequal_lengths_are_refused(monkeypatch):
    monkeypatch.setattr(elo_module, "compiled_replay", lambda: None)
    with pytest.raises(ValueError, match="zip"):
        sequential_elo(3, (np.array([0, 1]), np.array([1, 2]), np.array([0])))


def test_a_self_battle_is_refused_with_its_reason():
    state = EloState.start(2)
    with pytest.raises(ValueError, match=r"^a model cannot battle itself$"):
        state.step(1, 1, 0)


def test_a_custom_k_schedule_is_used_live_and_in_replay():
    # K fixed at 32: one win between equals moves each side by 32 * (1 - 1/2) = 16 points.
    params = EloParams(k_max=32.0, k_min=32.0, k_half=15.0)
    state = EloState.start(2, params=params)
    state.step(0, 1, 0)
    assert state.ratings == [1016.0, 984.0]
    replay = sequential_elo(2, (np.array([0]), np.array([1]), np.array([0])), params=params)
    assert replay.ratings == [1016.0, 984.0]
    assert replay.battles == [1, 1] and all(type(n) is int for n in replay.battles)


OUTCOMES = r"^outcome codes must be 0 \(a wins\), 1 \(b wins\), 2 \(tie\) or 3 \(both bad\)$"


@pytest.mark.parametrize(
    ("votes", "message"),
    [((np.array([0]), np.array([0]), np.array([0])), r"^a model cannot battle itself$"),
     ((np.array([0]), np.array([3]), np.array([0])), r"^model index out of range 0\.\.2$"),
     ((np.array([0]), np.array([1]), np.array([4])), OUTCOMES),
     ((np.array([0]), np.array([1]), np.array([-1])), OUTCOMES)],
)  # fmt: skip
def test_replay_refuses_what_is_not_a_vote(votes, message):
    with pytest.raises(ValueError, match=message):
        sequential_elo(3, votes)


def test_an_arena_without_models_replays_to_nothing():
    empty = np.array([], dtype=np.int64)
    assert sequential_elo(0, (empty, empty, empty)).ratings == []


def test_the_compiled_loop_is_used_only_where_it_gives_the_plain_loops_floats(monkeypatch):
    """Both loops call the C library's exp; where math.exp were another implementation that
    rounds differently, the compiled loop would break the bit-identity of a replay with the
    live app's steps. A one-time check on fixed votes decides, and it can say no."""
    assert elo_module._compiled_agrees()
    real = elo_kernel.replay

    def off_by_a_bit(ratings, *args):
        real(ratings, *args)
        ratings[0] = np.nextafter(ratings[0], np.inf)

    monkeypatch.setattr(elo_kernel, "replay", off_by_a_bit)
    elo_module._compiled_agrees.cache_clear()
    try:
        assert not elo_module._compiled_agrees()
        assert elo_module.compiled_replay() is None
    finally:
        elo_module._compiled_agrees.cache_clear()
