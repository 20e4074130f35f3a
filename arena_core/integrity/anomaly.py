"""Anomalous voters: Chatbot Arena's sequential test, as a deterministic function of the log.

Chiang et al. (2024), "Chatbot Arena: An Open Platform for Evaluating LLMs by
Human Preference", section 5.1 ("Detecting Anomalous Users") [CA24]: each vote
gets a p-value against the other voters' votes on the same pair, a voter's
p-values are combined by Fisher's method, ``M_j = -2 sum_{i<=j} log p_i``, and
the voter is flagged when, at one of a few checkpoints ``j``,
``M_j >= chi2_{2j}(1 - alpha / K)`` (a Bonferroni split over the K checkpoints).

What we do the same and what differs, and why
---------------------------------------------
* **p-value.** [CA24] ranks ratings one way, ``p = (1 + #{h in H : h >= x}) /
  (|H| + 1)``. A vote here is one of four outcomes on an unordered pair (first
  model wins, second wins, tie, both bad), so we rank them by rarity instead:
  with ``c'`` the counts of each outcome among the other voters' earlier votes
  on the pair plus the vote itself, ``S`` the votes of outcomes rarer than the
  vote's and ``E`` those exactly as rare (itself included),
  ``p = (S + U E) / (|H| + 1)`` with a tie-break ``U`` in (0, 1) (see
  :mod:`~arena_core.integrity.pvalue`). It is the conformal p-value with rarity
  as the score, uniform when the vote is exchangeable with ``H``, and it
  catches a campaign for or against any model whichever side it is shown on,
  which a one-way rank catches only half the time. ``H`` holds earlier votes of
  *other* voters that carry no flag (votes already left out pollute nothing);
  votes without a voter count in ``H``; judge votes take no part.
* **Who makes the reference.** [CA24] compares with everyone's votes. Here a
  vote enters ``H`` only from its voter's ``checks[0]``-th (5th) vote on, and
  a voter has at most :attr:`AnomalyParams.reference_per_pair` (1) vote in a
  pair's ``H``: its first such vote on the pair (:func:`enters_history`).
  Why the first part: a voter under the first checkpoint is never tested, so
  a flood of one-off identities wrote ``H`` unseen (2,000 identities of 4
  ``both_bad`` votes each got 947 of 1,500 honest voters flagged, none of
  themselves: ``bench/anomaly_poisoning.py``); now an identity must cast 5
  votes to put one in ``H`` and is tested at that 5th vote. Why the second:
  the first part alone let heavy voters (a campaign among them) fill more of
  ``H`` while light honest voters' votes waited, and a campaign compared with
  its own votes hides (TPR 0.636 to 0.380 on the voters scenario); one vote
  per voter and pair takes that back and more (0.602; a campaign of 5 x 80
  votes, 0.546 before, 0.874). Both parts read only counts of the voter's
  own earlier votes, never an outcome or a flag decision, so ``H`` is chosen
  without looking at the vote tested (``p`` stays uniform for an honest
  vote) and the test stays non-recursive (a vote's ``p`` does not depend on
  who is flagged). Votes without a voter all enter: the app cannot write one,
  and in a log that names none they are the whole reference. An imported
  FastChat export's ``judge`` is its voter, tested like any (its public
  exports name one anonymous judge for every battle, so none is tested there;
  ``--include-flagged`` gives FastChat's own board, which tests no one).
* **Checkpoints.** [CA24] tests at five randomly chosen ``j`` in 1..100. The
  published log must replay to exactly the Space's board, so ours are fixed
  and public: ``j`` in :attr:`AnomalyParams.checks` (5, 10, 20, ... 2560), each
  at level ``alpha / K``. Knowing them buys an attacker little: ``M_j`` only
  grows, and a flagged voter loses every vote, earlier ones included.
* **Exact arithmetic.** Ties between equally rare outcomes are broken by a
  number drawn from the vote's timestamp (:func:`~arena_core.integrity.pvalue.tiebreak`),
  which makes ``p`` uniform under the null instead of conservative (with four
  outcomes the plain one wastes most of the test's power). ``p`` is kept as an
  exact ratio of integers, ``-2 log p`` is rounded to fixed point (units of
  2^-32) by one function that both paths call, and the sums and threshold
  comparisons are integer arithmetic. So the live app (vote by vote,
  :mod:`~arena_core.integrity.detector`) and a replay of the log (vectorised,
  :func:`detect`) flag the same voters at the same vote, bit for bit. (On
  another machine a logarithm could round differently only within a hair of a
  rounding boundary, and would then move a statistic by 2^-32.)

Consequence for the ratings: a flagged voter's votes all stay in the log and
leave every board. The replay computes the flagged voters from the whole log
(:func:`anomalous_votes`, used by ``select_votes``); the live app flags votes
of already-flagged voters when it writes them, and rebuilds its boards from the
log at the moment a voter is flagged.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pyarrow as pa

from arena_core.integrity.counting import (
    before_in_group,
    p_value_parts_in_order,
    running_totals,
)
from arena_core.integrity.pvalue import FIXED_ONE, chi2_isf_even, terms_of, tiebreak
from arena_core.ratings.counts import A_WINS, B_WINS, OUTCOME_NAMES
from arena_core.votes import arrow
from arena_core.votes.clean import VoteTable
from arena_core.votes.columns import may_repeat
from arena_core.votes.kernels import pc

#: Flag written on a vote whose voter the test has already flagged.
ANOMALOUS_FLAG = "anomalous_voter"
#: Outcome code of each vote string when model_a is the pair's first model.
OUTCOME_OF_VOTE = {name: code for code, name in enumerate(OUTCOME_NAMES)}
#: Largest (arena, model, model) code numbered without sorting (a count array of this size).
MAX_DIRECT_PAIRS = 1 << 22


@dataclass(frozen=True)
class AnomalyParams:
    """The test's settings; the Space and the CLI both use the defaults."""

    #: Chance that a voter whose votes look like everyone else's is flagged at some checkpoint,
    #: while the voter's votes on a pair are few beside that pair's reference. A voter casting
    #: many votes on pairs few others voted on is compared again and again with the same few
    #: reference votes (one per other voter): its p-values are then dependent, and honest heavy
    #: voters are flagged more often (10 alike voters x 320 votes over 10 pairs: about 5%,
    #: 3-6% across seeds; see
    #: ``tests/test_analysis_hunt.py`` and the README).
    alpha: float = 0.01
    #: The voter's vote counts at which the test is made (each at level alpha / len(checks)).
    checks: tuple[int, ...] = (5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560)
    #: Most votes one voter has in a pair's reference (its first ones from ``checks[0]`` on).
    reference_per_pair: int = 1

    def __post_init__(self):
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if (
            not self.checks
            or any(j < 1 for j in self.checks)
            or list(self.checks) != sorted(set(self.checks))
        ):
            raise ValueError(f"checks must be increasing positive counts, got {self.checks}")
        if self.reference_per_pair < 1:
            raise ValueError(f"reference_per_pair must be >= 1, got {self.reference_per_pair}")

    def thresholds(self) -> dict[int, int]:
        """Fixed-point threshold of ``M_j`` at each checkpoint ``j``."""
        return _thresholds(self.alpha, self.checks)


@lru_cache(maxsize=8)
def _thresholds(alpha: float, checks: tuple[int, ...]) -> dict[int, int]:
    level = alpha / len(checks)
    return {j: math.ceil(chi2_isf_even(level, 2 * j) * FIXED_ONE) for j in checks}


@dataclass(frozen=True)
class Detection:
    """The test run over a whole log, in replay order, on integer codes.

    Rows are votes; ``voter`` is each row's voter code (-1: no voter, or not a
    human vote), ``pair`` its pair code, ``outcome`` its outcome on the pair,
    ``eligible`` whether it enters the other voters' history (a human vote
    without flags, by :func:`enters_history`'s rule). ``mask`` marks every vote of a flagged voter, ``flagged_at``
    maps each flagged voter code to the vote count at which the test fired,
    ``term`` holds the rows' ``-2 ln p`` (fixed point; 0 where not worked out),
    ``every_voter`` says whether it was worked out for every voter (see
    :func:`sequential_test`). ``voters`` and ``pairs`` name the codes when the
    log had names.
    """

    pair: np.ndarray
    outcome: np.ndarray
    voter: np.ndarray
    eligible: np.ndarray
    term: np.ndarray
    mask: np.ndarray
    flagged_at: dict[int, int]
    every_voter: bool = True
    #: Voter code -> voter hash (an Arrow string array, or any sequence of str).
    voters: Sequence | None = None
    #: Pair code -> (arena, first model, second model).
    pairs: list[tuple[str, str, str]] | None = None

    def voter_names(self) -> list[str]:
        names = self.voters if self.voters is not None else []
        return names.to_pylist() if isinstance(names, pa.Array) else list(names)

    @property
    def flagged_voters(self) -> dict[str, int]:
        """Flagged voter (hash) -> the vote count at which the test fired."""
        names = self.voters if self.voters is not None else []
        return {str(names[k]): j for k, j in self.flagged_at.items()}


def sequential_test(pair: np.ndarray, outcome: np.ndarray, voter: np.ndarray, unflagged: np.ndarray,
                    tie: np.ndarray, params: AnomalyParams = AnomalyParams(), *,
                    every_voter: bool = True) -> Detection:  # fmt: skip
    """Run the test over rows in replay order (see :class:`Detection` for the arrays;
    ``unflagged`` marks the human rows without a flag, ``tie`` is each row's tie-break,
    :func:`tiebreak` of its timestamp). Which rows make the history is
    :func:`enters_history`'s rule.

    With ``every_voter`` False, p-values are worked out only for the votes of
    voters who reach the first checkpoint: the flags are the same, and a log of
    one-off voters costs next to nothing. The live detector needs them all.
    """
    pair, outcome, voter = (np.asarray(x, dtype=np.int64) for x in (pair, outcome, voter))
    unflagged = np.asarray(unflagged, dtype=bool)
    n = len(pair)
    has_voter = voter >= 0
    votes_by = np.bincount(voter[has_voter]) if has_voter.any() else np.zeros(0, dtype=np.int64)
    tested = has_voter.copy()
    if not every_voter:
        tested[has_voter] = votes_by[voter[has_voter]] >= params.checks[0]
    seq = np.flatnonzero(tested)
    # An untested voter's rows are all under the first checkpoint: none enters the history.
    eligible = unflagged & ~has_voter
    eligible[seq] = enters_history(voter[seq], pair[seq], unflagged[seq], params)
    term = np.zeros(n, dtype=np.int64)
    mask = np.zeros(n, dtype=bool)
    flagged_at: dict[int, int] = {}
    if len(seq):
        num, den = p_value_parts_in_order(
            pair, outcome, voter, eligible, np.asarray(tie, dtype=np.int64), tested
        )
        term[seq] = terms_of(num, den)
        who = voter[seq]
        j, m = running_totals(who, term[seq])  # each voter's count and statistic so far
        flagged_at = checkpoint_hits(who, j, m, params)
        mask[seq] = np.isin(who, list(flagged_at))
    return Detection(pair, outcome, voter, eligible, term, mask, flagged_at, every_voter)


def enters_history(voter: np.ndarray, pair: np.ndarray, unflagged: np.ndarray,
                   params: AnomalyParams = AnomalyParams()) -> np.ndarray:  # fmt: skip
    """Whether each row enters the later votes' history ``H`` (see the module docstring):
    an unflagged row from its voter's ``params.checks[0]``-th row on, while its voter has
    fewer than ``params.reference_per_pair`` rows in the pair's ``H``; rows without a voter
    (-1) whenever unflagged.

    Rows are human votes in replay order and must hold every human vote of their voters
    (the number counts flagged rows too, as the test's ``j`` does). The live detector
    applies the same rule vote by vote.
    """
    voter, pair = np.asarray(voter, dtype=np.int64), np.asarray(pair, dtype=np.int64)
    enters = np.asarray(unflagged, dtype=bool).copy()
    rows = np.flatnonzero(voter >= 0)
    if not len(rows):
        return enters
    who = voter[rows]
    number, _ = running_totals(who, np.zeros(len(rows), dtype=np.int64))
    may = enters[rows] & (number >= params.checks[0])
    key = who * (int(pair.max()) + 1) + pair[rows]
    before = before_in_group(key, may.astype(np.int64)[:, None])[:, 0]
    enters[rows] = may & (before < params.reference_per_pair)
    return enters


def checkpoint_hits(who: np.ndarray, count: np.ndarray, statistic: np.ndarray,
                    params: AnomalyParams) -> dict[int, int]:  # fmt: skip
    """Voter -> the first checkpoint count at which its statistic reached the threshold.

    Rows are tested votes, each voter's in replay order: ``who`` the voter,
    ``count`` and ``statistic`` its running vote count and ``M_j`` (fixed point)
    up to and including the row (:func:`~arena_core.integrity.counting.running_totals`).
    """
    limits = params.thresholds()
    checked = np.flatnonzero(np.isin(count, list(limits)))
    hit = checked[
        statistic[checked] >= np.array([limits[x] for x in count[checked].tolist()], dtype=np.int64)
    ]
    flagged_at: dict[int, int] = {}
    for code, j in zip(who[hit].tolist(), count[hit].tolist(), strict=True):
        flagged_at.setdefault(code, j)  # rows are in order: the first hit wins
    return flagged_at


def detect(votes: VoteTable, params: AnomalyParams = AnomalyParams(), *,
           every_voter: bool = True) -> Detection:  # fmt: skip
    """Run the test over a replay-ordered vote table; see the module docstring."""
    human = _human(votes)
    voter, voters = _voters(votes)
    voter = np.where(human, voter, -1)
    known = voter[voter >= 0]
    if not every_voter and (not len(known) or np.bincount(known).max() < params.checks[0]):
        nothing = np.zeros(len(votes), dtype=np.int64)  # no one reached a checkpoint
        return Detection(
            nothing, nothing, voter, nothing > 0, nothing, nothing > 0, {}, False, voters
        )
    pair, outcome, pairs = _pairs(votes)
    unflagged = human & ~_flagged(votes)
    result = sequential_test(pair, outcome, voter, unflagged, tiebreak(votes.ts_us), params,
                             every_voter=every_voter)  # fmt: skip
    return replace(result, voters=voters, pairs=pairs)


class _LastDetection:
    """The detection of the last vote table asked about: a replay asks once per board."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last: tuple[weakref.ref, AnomalyParams, Detection] | None = None

    def get(self, votes: VoteTable, params: AnomalyParams, every_voter: bool) -> Detection:
        with self._lock:
            last = self._last
        if (last is not None and last[0]() is votes and last[1] == params
                and (last[2].every_voter or not every_voter)):  # fmt: skip
            return last[2]  # a detection of every voter also answers about the flags alone
        result = detect(votes, params, every_voter=every_voter)
        with self._lock:
            self._last = (weakref.ref(votes, self._forget), params, result)
        return result

    def _forget(self, ref: weakref.ref) -> None:
        """The table is gone: so goes its detection (tens of megabytes for a million votes)."""
        with self._lock:
            if self._last is not None and self._last[0] is ref:
                self._last = None


_last_detection = _LastDetection()


def detection_of(votes: VoteTable, params: AnomalyParams = AnomalyParams(), *,
                 every_voter: bool = False) -> Detection:  # fmt: skip
    """:func:`detect`, remembered for the last table asked about while that table lives."""
    return _last_detection.get(votes, params, every_voter)


def anomalous_votes(votes: VoteTable, params: AnomalyParams = AnomalyParams()) -> np.ndarray:
    """Mask of the votes of flagged voters (all False when the table has no ``voter`` column)."""
    if "voter" not in votes.table.column_names or not _someone_tested(votes, params):
        return np.zeros(len(votes), dtype=bool)
    return detection_of(votes, params).mask


def _someone_tested(votes: VoteTable, params: AnomalyParams) -> bool:
    """Whether some voter may have cast as many human votes as the first checkpoint.
    False is certain, and then no one is tested: the mask is all False without the
    test, which spares a log of one-off voters encoding a million of them (0.25 s)."""
    column = votes.column("voter")
    if len(votes) == 0:
        return False
    if pa.types.is_dictionary(column.type):
        return True
    rows = _human(votes) & arrow.valid(column)
    return may_repeat(column, params.checks[0], rows)


# -- columns to arrays ------------------------------------------------------------------


def _pairs(votes: VoteTable) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str, str]]]:
    """Pair code and oriented outcome of each row; models ordered by id within a pair."""
    enc = votes.encoded
    models = enc["model_a"].values
    rank = np.empty(len(models), dtype=np.int64)
    rank[np.argsort(np.array(models, dtype=object), kind="stable")] = np.arange(len(models))
    ra, rb = rank[enc["model_a"].codes], rank[enc["model_b"].codes]
    first, second = np.minimum(ra, rb), np.maximum(ra, rb)
    arena = enc["arena"].codes.astype(np.int64)
    width = max(len(models), 1)
    key = (arena * width + first) * width + second
    if len(key) and int(key.max()) < MAX_DIRECT_PAIRS:  # codes as they are: no sort needed
        present = np.bincount(key) > 0
        unique = np.flatnonzero(present)
        pair = (np.cumsum(present) - 1)[key]
    else:
        unique, pair = np.unique(key, return_inverse=True)
    by_rank = sorted(models)
    arenas = enc["arena"].values
    pairs = [(arenas[k // (width * width)], by_rank[(k // width) % width], by_rank[k % width])
             for k in unique.tolist()]  # fmt: skip
    outcome = orient(enc["vote"].map(OUTCOME_OF_VOTE), ra > rb)
    return pair.astype(np.int64), outcome, pairs


def orient(outcome: np.ndarray, swapped: np.ndarray) -> np.ndarray:
    """Outcome codes seen from the pair's first model: a win of a swapped pair's a is a win
    of its second model. Ties and both-bad need no turning."""
    outcome = np.asarray(outcome, dtype=np.int64)
    turned = np.select([outcome == A_WINS, outcome == B_WINS], [B_WINS, A_WINS], outcome)
    return np.where(swapped, turned, outcome)


def _human(votes: VoteTable) -> np.ndarray:
    kind = votes.encoded.get("voter_kind")
    if kind is None:
        return np.ones(len(votes), dtype=bool)
    return (kind.codes < 0) | kind.isin(["human"])


def _flagged(votes: VoteTable) -> np.ndarray:
    if "flags" not in votes.table.column_names:
        return np.zeros(len(votes), dtype=bool)
    return arrow.nonempty(votes.column("flags"))


def _voters(votes: VoteTable) -> tuple[np.ndarray, pa.Array]:
    """Voter codes (-1 for none) and the voter of each code, without a Python-level pass."""
    column = votes.column("voter")
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    encoded = pc.dictionary_encode(column)
    codes = pc.fill_null(encoded.indices, arrow.scalar(-1, encoded.indices.type))
    return arrow.to_numpy(codes).astype(np.int64), encoded.dictionary
