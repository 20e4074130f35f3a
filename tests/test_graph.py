"""The comparison graph: components and the split of plain MLE into finite and unbounded
ratings, on hand-drawn graphs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.ratings import graph
from arena_core.ratings.counts import A_WINS, TIE, PairCounts, PairData, count_pairs


def votes(n, *triples):
    """Counts from (a, b, outcome) triples."""
    a, b, o = (np.array(x, dtype=int) for x in zip(*triples, strict=True))
    return count_pairs(n, a, b, o)


def test_components_are_numbered_by_battles_and_unplayed_models_have_none():
    # {0, 1} met once; {2, 3, 4} met three times; 5 never played.
    counts = votes(6, (0, 1, A_WINS), (2, 3, A_WINS), (3, 4, TIE), (4, 2, A_WINS))
    np.testing.assert_array_equal(graph.components(counts), [1, 1, 0, 0, 0, -1])


def test_a_strongly_connected_log_is_all_fitted():
    counts = votes(3, (0, 1, A_WINS), (1, 2, A_WINS), (2, 0, A_WINS))
    split = graph.split_unbounded(counts)
    assert split.unbounded == [] and split.fitted.all()


def test_never_beaten_never_won_and_apart():
    # 0 and 1 beat each other: the fitted group. 2 beat 0 and was never beaten: above.
    # 3 lost to 1 and never won: below. 4 only ever lost to 2: related to the group only
    # through an unbounded model: apart. 5 never played: nothing to split.
    counts = votes(6, (0, 1, A_WINS), (1, 0, A_WINS), (2, 0, A_WINS), (1, 3, A_WINS),
                   (2, 4, A_WINS))  # fmt: skip
    split = graph.split_unbounded(counts)
    assert split.side.tolist() == [graph.FITTED, graph.FITTED, graph.ABOVE, graph.BELOW,
                                   graph.APART, graph.FITTED]  # fmt: skip
    assert split.unbounded == [2, 3, 4]


def test_a_draw_binds_both_ways():
    # 2 drew with 0 once: it is neither above nor below the group.
    counts = votes(3, (0, 1, A_WINS), (1, 0, A_WINS), (2, 0, TIE))
    assert graph.split_unbounded(counts).unbounded == []


def test_the_busier_group_is_fitted_in_each_component():
    # Component A: {0, 1} cycle (4 votes) above 2 (1 vote). Component B: 3 beat 4 once.
    counts = votes(5, (0, 1, A_WINS), (1, 0, A_WINS), (0, 1, A_WINS), (1, 0, A_WINS),
                   (0, 2, A_WINS), (3, 4, A_WINS))  # fmt: skip
    split = graph.split_unbounded(counts)
    assert split.side[2] == graph.BELOW
    # Two equally busy singletons: the lowest index is fitted, the other is unbounded.
    assert split.side[3] == graph.FITTED and split.side[4] == graph.BELOW


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5),
                                             st.sampled_from([0, 1, 2])), max_size=15))  # fmt: skip
def test_fitted_groups_are_strongly_connected_and_unbounded_models_are_not_in_them(n, raw):
    triples = [(a % n, b % n, o) for a, b, o in raw if a % n != b % n]
    counts = votes(n, *triples) if triples else PairCounts.zeros(n)
    split = graph.split_unbounded(counts)
    inside = split.fitted[:, None] & split.fitted[None, :]
    kept = PairCounts(counts.wins * inside, counts.ties * inside, counts.both_bad * inside)
    pairs = PairData.from_counts(kept)
    half = 0.5 * pairs.draws
    connected = graph.reachability(graph.met(n, pairs))[0]
    assert graph.strongly_connected(n, pairs, pairs.win_i + half, pairs.win_j + half,
                                    connected)[0]  # fmt: skip
    # Each component with votes keeps at least one fitted model.
    for k in set(split.component[split.component >= 0].tolist()):
        assert split.fitted[split.component == k].any()
