"""The comparison graph of a vote log: who met whom, who beat whom.

Two questions decide what a board may claim. Which models were ever compared,
directly or through others (the connected *components* of the "met" graph)?
Ratings in different components are tied together by nothing but the prior, so
a board ranks models only within a component. And, for plain maximum
likelihood, which ratings are finite? Within a component the maximum exists
only if every model reaches every other by "beat or drew" edges [For57]_; when
it does not, the *strongly connected* groups of that graph are finite among
themselves, and every other model of the component is infinitely far above or
below them. :func:`split_unbounded` keeps the best-supported group and says
where each other model lies.

Graphs are boolean adjacency matrices, in batches ``(batch, n, n)`` where a
bootstrap needs one per replicate; transitive closure by repeated squaring
costs ``log2 n`` matrix products, a few microseconds for twenty models.

References
----------
.. [For57] L. R. Ford, "Solution of a ranking problem from binary comparisons",
   American Mathematical Monthly 64(8), 1957.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena_core.ratings.counts import PairCounts, PairData

#: Where a model lies relative to the fitted group of its component (plain MLE).
FITTED, ABOVE, BELOW, APART = 0, 1, -1, 2


def met(n_items: int, pairs: PairData, batch: int = 1, totals=None) -> np.ndarray:
    """Adjacency ``(batch, n, n)`` of "met at least once" (``totals`` per replicate, optional)."""
    adj = np.zeros((batch, n_items, n_items), dtype=bool)
    seen = np.ones((batch, pairs.n_pairs), dtype=bool) if totals is None else totals > 0
    adj[:, pairs.i, pairs.j] = seen
    adj[:, pairs.j, pairs.i] = seen
    return adj


def beats(n_items: int, pairs: PairData, win_i, win_j) -> np.ndarray:
    """Adjacency ``(batch, n, n)`` of "i beat or drew j at least once" (draws count both ways)."""
    win_i, win_j = np.atleast_2d(win_i), np.atleast_2d(win_j)
    adj = np.zeros((len(win_i), n_items, n_items), dtype=bool)
    adj[:, pairs.i, pairs.j] = win_i > 0
    adj[:, pairs.j, pairs.i] = win_j > 0
    return adj


def reachability(adj: np.ndarray) -> np.ndarray:
    """Transitive closure, with self-loops, of a batch of directed graphs."""
    n = adj.shape[-1]
    reach = adj | np.eye(n, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        f = reach.astype(np.float32)
        reach = (f @ f) > 0
    return reach


def components(counts: PairCounts) -> np.ndarray:
    """Component of each model in the "met" graph: 0 for the one with most battles, then 1...

    Models without battles get -1. Ties in battles go to the component holding
    the lowest model index, so the numbering depends only on the counts.
    """
    n = counts.n_items
    pairs = PairData.from_counts(counts)
    played = counts.battles().sum(axis=1) > 0
    reach = reachability(met(n, pairs))[0]
    battles = counts.battles().sum(axis=1)
    groups = []
    seen = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(played):
        if not seen[i]:
            members = reach[i] & played
            seen |= members
            groups.append(members)
    groups.sort(key=lambda m: (-int(battles[m].sum()), int(np.flatnonzero(m)[0])))
    label = np.full(n, -1, dtype=np.int64)
    for k, members in enumerate(groups):
        label[members] = k
    return label


@dataclass(frozen=True)
class Split:
    """Which models plain maximum likelihood can rate.

    ``side[i]`` is :data:`FITTED` for a model of its component's fitted group,
    :data:`ABOVE` (never beaten by that group, directly or through others: its
    rating would be +infinity), :data:`BELOW` (never beat it: -infinity) or
    :data:`APART` (related to the group only through unbounded models), and
    :data:`FITTED` too for models without battles (they have nothing to split).
    """

    side: np.ndarray
    component: np.ndarray

    @property
    def fitted(self) -> np.ndarray:
        return self.side == FITTED

    @property
    def unbounded(self) -> list[int]:
        return [int(i) for i in np.flatnonzero(self.side != FITTED)]


def split_unbounded(counts: PairCounts) -> Split:
    """Per component, the largest strongly connected "beat or drew" group and where the rest lie.

    The fitted group of a component is its strongly connected group with the
    most battles (then the most models, then the lowest index). Its maximum-
    likelihood ratings are the limit of the whole component's as the others go
    to plus or minus infinity: votes between the group and the others are won
    by the same side every time, and drop out of the likelihood in that limit.
    """
    n = counts.n_items
    pairs = PairData.from_counts(counts)
    half = 0.5 * pairs.draws
    reach = reachability(beats(n, pairs, pairs.win_i + half, pairs.win_j + half))[0]
    strong = reach & reach.T
    label = components(counts)
    battles = counts.battles().sum(axis=1)
    side = np.full(n, FITTED, dtype=np.int64)
    for k in range(label.max() + 1):
        members = np.flatnonzero(label == k)
        groups = {tuple(np.flatnonzero(strong[i] & (label == k))) for i in members}
        best = max(groups, key=lambda g: (int(battles[list(g)].sum()), len(g), -g[0]))
        ref = best[0]
        for i in members:
            if strong[ref, i]:
                continue
            up, down = reach[i, ref], reach[ref, i]
            side[i] = ABOVE if up else BELOW if down else APART
    return Split(side=side, component=label)


def strongly_connected(n_items: int, pairs: PairData, win_i, win_j, connected) -> np.ndarray:
    """Per replicate, whether each comparison component is strongly connected by "beat" edges.

    ``connected`` is the ``(n, n)`` closure of the "met" graph of the data the
    replicates were drawn from, so a replicate that loses a pair's votes is
    judged against the components of the original log.
    """
    reach = reachability(beats(n_items, pairs, win_i, win_j))
    return (reach | ~connected[None]).all(axis=(1, 2))


def strongly_connected_models(n_items: int, pairs: PairData, win_i, win_j,
                              connected) -> np.ndarray:  # fmt: skip
    """Per replicate and model, whether the model's comparison component is strongly
    connected by "beat" edges (``(batch, n)``; ``connected`` as in
    :func:`strongly_connected`): the model reaches every model of its component and every
    one reaches it, which holds for one model of a component exactly when for all."""
    reach = reachability(beats(n_items, pairs, win_i, win_j))
    out = (reach | ~connected[None]).all(axis=2)
    return out & (reach | ~connected[None]).all(axis=1)
