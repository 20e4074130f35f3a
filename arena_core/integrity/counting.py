"""Counting in replay order over a million votes: the array machinery of the anomalous-voter test.

For every vote the test needs how often each outcome was voted before it, on
its pair, by other voters. :func:`p_value_parts_in_order` works that out for a
whole log in one pass: a compiled loop (numba, as the Elo replay uses) from
:data:`COMPILED_FROM` votes, else the same counts by sorting and running sums.
Both give the same integers (the tests check it), so which one ran never
changes a flag.
"""

from __future__ import annotations

import functools

import numpy as np

from arena_core.integrity.pvalue import N_OUTCOMES, TIE_BITS, p_value_parts

#: Votes from which the compiled loop is used (below, importing numba costs more than it saves).
COMPILED_FROM = 50_000


def p_value_parts_in_order(
    pair, outcome, voter, counted, tie, tested, *, compiled: bool | None = None
):
    """Numerator and denominator (:func:`~arena_core.integrity.pvalue.p_value_parts`) of
    the p-value of each ``tested`` row, in row order.

    Rows are votes in replay order: ``pair`` and ``outcome`` codes, ``voter``
    code (-1: none), ``counted`` whether the row enters later votes' history,
    ``tie`` its tie-break. ``tested`` rows must hold every row of their voters.
    ``compiled`` forces (True) or avoids (False) the numba loop.
    """
    seq = np.flatnonzero(tested)
    if not len(seq):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    own = np.full(len(pair), -1, dtype=np.int64)
    own[seq] = dense_codes(voter[seq] * (int(pair.max()) + 1) + pair[seq])
    loop = (
        _compiled_loop() if (compiled is None and len(pair) >= COMPILED_FROM) or compiled else None
    )
    if loop is None:
        others = _earlier(pair, outcome, counted, seq) - _earlier(
            own[seq], outcome[seq], counted[seq], np.arange(len(seq))
        )
        return p_value_parts(others, outcome[seq], tie[seq])
    num = np.zeros(len(pair), dtype=np.int64)
    den = np.zeros(len(pair), dtype=np.int64)
    totals = np.zeros((int(pair.max()) + 1, N_OUTCOMES), dtype=np.int64)
    owned = np.zeros((int(own.max()) + 1, N_OUTCOMES), dtype=np.int64)
    loop(
        pair,
        outcome,
        own,
        counted,
        np.asarray(tested, dtype=bool),
        tie,
        totals,
        owned,
        num,
        den,
        TIE_BITS,
    )
    return num[seq], den[seq]


def _loop(
    pair, outcome, own, counted, tested, tie, totals, owned, num, den, bits
):  # pragma: no cover - compiled
    """Compiled by numba: the p-value parts vote by vote, as the live detector counts."""
    others = np.zeros(4, dtype=np.int64)
    for i in range(pair.shape[0]):
        p = pair[i]
        o = outcome[i]
        g = own[i]
        if tested[i]:
            total = 0
            for k in range(4):
                others[k] = totals[p, k] - owned[g, k]
                total += others[k]
            others[o] += 1
            mine = others[o]
            rarer = 0
            as_rare = 0
            for k in range(4):
                if others[k] < mine:
                    rarer += others[k]
                elif others[k] == mine:
                    as_rare += others[k]
            num[i] = (rarer << bits) + tie[i] * as_rare
            den[i] = (total + 1) << bits
        if counted[i]:
            totals[p, o] += 1
            if g >= 0:
                owned[g, o] += 1


def running_totals(who: np.ndarray, term: np.ndarray, *, compiled: bool | None = None):
    """For each row, its voter's vote count and summed ``term`` up to and including it.

    ``who`` are voter codes (0, 1, 2...), rows in replay order; ``compiled`` as in
    :func:`p_value_parts_in_order`.
    """
    who, term = np.asarray(who, dtype=np.int64), np.asarray(term, dtype=np.int64)
    loop = (
        _compiled(_running)
        if (compiled is None and len(who) >= COMPILED_FROM) or compiled
        else None
    )
    if loop is None:
        step = np.stack([np.ones(len(who), dtype=np.int64), term], axis=1)
        count, total = (before_in_group(who, step) + step).T
        return count, total
    count = np.zeros(len(who), dtype=np.int64)
    total = np.zeros(len(who), dtype=np.int64)
    loop(who, term, np.zeros(int(who.max()) + 1 if len(who) else 0, dtype=np.int64),
         np.zeros(int(who.max()) + 1 if len(who) else 0, dtype=np.int64), count, total)  # fmt: skip
    return count, total


def _running(who, term, seen, summed, count, total):  # pragma: no cover - compiled
    for i in range(who.shape[0]):
        v = who[i]
        seen[v] += 1
        summed[v] += term[i]
        count[i] = seen[v]
        total[i] = summed[v]


def _compiled_loop():
    return _compiled(_loop)


@functools.cache
def _compiled(function):
    """``function`` compiled by numba (cached on disk after the first compile), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=True)(function)


def dense_codes(keys: np.ndarray) -> np.ndarray:
    """Keys renumbered 0, 1, 2... in key order (what ``np.unique(..., return_inverse=True)``
    gives), by :func:`stable_order` instead of a comparison sort."""
    keys = np.asarray(keys, dtype=np.int64)
    order = stable_order(keys)
    ordered = keys[order]
    starts = np.ones(len(keys), dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    codes = np.empty(len(keys), dtype=np.int64)
    codes[order] = np.cumsum(starts) - 1
    return codes


def _earlier(
    group: np.ndarray, outcome: np.ndarray, counted: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """For each row of ``rows``: how many earlier ``counted`` rows of its group had each outcome.

    One stable sort by group (:func:`stable_order`), then per outcome a running
    count in that order, read at each asked row and at its group's first row.
    """
    n = len(group)
    order = stable_order(group)
    g = group[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = g[1:] != g[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    asked = place[rows]
    group_start = first[asked]
    kept, outcome = counted[order], outcome[order]
    out = np.empty((len(rows), N_OUTCOMES), dtype=np.int64)
    for o in range(N_OUTCOMES):
        hit = (kept & (outcome == o)).astype(np.int32)
        before = np.cumsum(hit, dtype=np.int32) - hit
        out[:, o] = before[asked] - before[group_start]
    return out


def before_in_group(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each row, the sum of ``values`` (2-D, integer) over earlier rows with the same key."""
    order = stable_order(keys)
    ordered = values[order]
    before = np.cumsum(ordered, axis=0) - ordered
    k = keys[order]
    starts = np.ones(len(k), dtype=bool)
    starts[1:] = k[1:] != k[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(len(k)), 0))
    out = np.empty_like(before)
    out[order] = before - before[first]
    return out


def stable_order(keys: np.ndarray) -> np.ndarray:
    """The stable sorting order of non-negative integer ``keys``: a radix sort, 16 bits a pass.

    NumPy sorts 16-bit integers stably in linear time; codes of voters or pairs
    rarely need more than two passes, where a comparison sort of a million
    64-bit keys takes several times longer.
    """
    keys = np.asarray(keys, dtype=np.int64)
    order = np.arange(len(keys))
    if not len(keys):
        return order
    top, shift = int(keys.max()), 0
    while True:
        digit = ((keys[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
        if top >> shift == 0:
            return order
