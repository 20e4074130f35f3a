"""The anomalous-voter test, vote by vote, continuing from a replay of the log.

The live app starts from :func:`~arena_core.integrity.anomaly.detect` run on
the replayed log, then feeds every vote it writes, in log order, to
:meth:`AnomalyDetector.observe`. The state is integer counts and fixed-point
sums, updated exactly as the vectorised replay computes them, so after any
number of votes the live detector has flagged exactly the voters a replay of
the log would flag (the tests check this on random logs). That includes which
votes make a pair's history: an unflagged vote without a voter, or from its
voter's first checkpoint on while the voter has fewer than
``reference_per_pair`` votes in it (:func:`~arena_core.integrity.anomaly.enters_history`).

The replayed part of the state is kept in sorted numpy arrays (a million
voters take tens of megabytes, not the better part of a gigabyte of Python
objects); what is met for the first time after start-up goes into small dicts.
"""

from __future__ import annotations

import numpy as np

from arena_core.integrity.anomaly import OUTCOME_OF_VOTE, AnomalyParams, Detection, orient
from arena_core.integrity.pvalue import N_OUTCOMES, fisher_terms, tiebreak
from arena_core.votes.schema import Vote, parse_ts

#: Bits of a (voter, pair) key given to the pair index.
_PAIR_BITS = 32


class AnomalyDetector:
    """Running state of the test: each pair's history and each voter's statistic.

    Not locked: the service calls :meth:`observe` under the vote log's lock,
    in the order votes reach the log. :meth:`is_flagged` may be read anywhere.
    """

    def __init__(self, params: AnomalyParams | None = None):
        self.params = params or AnomalyParams()
        self._limits = self.params.thresholds()
        self._pair_index: dict[tuple[str, str, str], int] = {}
        #: Per pair: counts of each outcome among the votes of its history.
        self._totals: list[list[int]] = []
        # Voters of the replayed log (UTF-8, sorted), their vote count and statistic, and
        # counts of their votes in the history per pair, keyed (voter slot << 32 | pair), sorted.
        self._names = np.zeros(0, dtype="S1")
        self._count = np.zeros(0, dtype=np.int64)
        self._total = np.zeros(0, dtype=np.int64)
        self._own_keys = np.zeros(0, dtype=np.int64)
        self._own = np.zeros((0, N_OUTCOMES), dtype=np.int64)
        # Met since start-up: voter -> [count, statistic]; (voter, pair) -> counts.
        self._new_voters: dict[str, list[int]] = {}
        self._new_own: dict[tuple[str, int], list[int]] = {}
        #: Flagged voter -> the vote count at which the test fired.
        self.flagged: dict[str, int] = {}

    @classmethod
    def from_detection(cls, det: Detection, params: AnomalyParams | None = None) -> AnomalyDetector:
        """The state at the end of the log ``det`` was computed on (:func:`detect` over
        every voter)."""
        if det.pairs is None or det.voters is None or not det.every_voter:
            raise ValueError("the detector continues a detection of every voter of a named log")
        self = cls(params)
        self._pair_index = {key: k for k, key in enumerate(det.pairs)}
        totals = np.zeros((len(det.pairs), N_OUTCOMES), dtype=np.int64)
        np.add.at(totals, (det.pair[det.eligible], det.outcome[det.eligible]), 1)
        self._totals = totals.tolist()
        seq = det.voter >= 0
        names = np.strings.encode(np.asarray(det.voter_names(), dtype=np.str_), "utf-8")
        count = np.bincount(det.voter[seq], minlength=len(names))
        total = np.zeros(len(names), dtype=np.int64)
        np.add.at(total, det.voter[seq], det.term[seq])
        present = np.flatnonzero(count)
        order = present[np.argsort(names[present], kind="stable")]
        self._names, self._count, self._total = names[order], count[order], total[order]
        slot = np.full(len(names), -1, dtype=np.int64)
        slot[order] = np.arange(len(order))
        mine = det.eligible & seq
        keys = (slot[det.voter[mine]] << _PAIR_BITS) | det.pair[mine]
        self._own_keys, inverse = np.unique(keys, return_inverse=True)
        self._own = np.zeros((len(self._own_keys), N_OUTCOMES), dtype=np.int64)
        np.add.at(self._own, (inverse, det.outcome[mine]), 1)
        self.flagged = det.flagged_voters
        return self

    def is_flagged(self, voter: str | None) -> bool:
        return voter is not None and voter in self.flagged

    def observe(self, vote: Vote) -> bool:
        """Take one logged vote into account; whether its voter is flagged after it."""
        if (vote.voter_kind or "human") != "human":
            return False
        first, second = sorted((vote.model_a, vote.model_b))
        index = self._pair_index.setdefault((vote.arena, first, second), len(self._totals))
        if index == len(self._totals):
            self._totals.append([0] * N_OUTCOMES)
        outcome = int(orient(OUTCOME_OF_VOTE[vote.vote], vote.model_a > vote.model_b))
        total, voter = self._totals[index], vote.voter
        enters = not vote.flags  # the history's rule: anomaly.enters_history
        if voter is not None:
            slot = self._slot(voter)
            own = self._own_counts(voter, slot, index)
            others = np.array([[t - o for t, o in zip(total, own, strict=True)]])
            tie = tiebreak(np.array([parse_ts(vote.ts)]))
            count, statistic = self._add_term(
                voter, slot, int(fisher_terms(others, np.array([outcome]), tie)[0])
            )
            limit = self._limits.get(count)
            if voter not in self.flagged and limit is not None and statistic >= limit:
                self.flagged[voter] = count
            enters = (enters and count >= self.params.checks[0]
                      and sum(own) < self.params.reference_per_pair)  # fmt: skip
            if enters:
                self._add_own(voter, slot, index, outcome)
        if enters:
            total[outcome] += 1
        return self.is_flagged(voter)

    def snapshot(self) -> dict:
        """The state by name (pairs, voters), independent of how it is stored; for tests."""
        pair_names = {k: key for key, k in self._pair_index.items()}
        names = [n.decode() for n in self._names.tolist()]
        voters = {
            n: [int(c), int(t)] for n, c, t in zip(names, self._count, self._total, strict=True)
        }
        own = {(names[int(k) >> _PAIR_BITS], pair_names[int(k) & ((1 << _PAIR_BITS) - 1)]): row
               for k, row in zip(self._own_keys.tolist(), self._own.tolist(), strict=True)}  # fmt: skip
        own |= {(v, pair_names[p]): row for (v, p), row in self._new_own.items()}
        return {
            "pairs": {pair_names[k]: c for k, c in enumerate(self._totals) if any(c)},
            "own": own,
            "voters": voters | self._new_voters,
            "flagged": dict(self.flagged),
        }

    # -- the two stores ---------------------------------------------------------------

    def _slot(self, voter: str) -> int:
        """Index of ``voter`` among the replayed voters, or -1."""
        key = voter.encode()
        if len(key) > self._names.itemsize:  # would be cut to the width: cannot be there
            return -1
        k = int(np.searchsorted(self._names, key))
        return k if k < len(self._names) and self._names[k] == key else -1

    def _own_row(self, slot: int, index: int) -> int:
        if slot < 0:
            return -1
        key = (slot << _PAIR_BITS) | index
        k = int(np.searchsorted(self._own_keys, key))
        return k if k < len(self._own_keys) and self._own_keys[k] == key else -1

    def _own_counts(self, voter: str, slot: int, index: int) -> list[int]:
        row = self._own_row(slot, index)
        if row >= 0:
            return self._own[row].tolist()
        return self._new_own.get((voter, index), [0] * N_OUTCOMES)

    def _add_own(self, voter: str, slot: int, index: int, outcome: int) -> None:
        row = self._own_row(slot, index)
        if row >= 0:
            self._own[row, outcome] += 1
        else:
            self._new_own.setdefault((voter, index), [0] * N_OUTCOMES)[outcome] += 1

    def _add_term(self, voter: str, slot: int, term: int) -> tuple[int, int]:
        if slot >= 0:
            self._count[slot] += 1
            self._total[slot] += term
            return int(self._count[slot]), int(self._total[slot])
        state = self._new_voters.setdefault(voter, [0, 0])
        state[0] += 1
        state[1] += term
        return state[0], state[1]
