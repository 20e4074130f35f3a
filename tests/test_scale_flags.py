"""The anomalous-voter test in DuckDB (window counts, streamed by voter): the in-process flags.

The reference is ``detect(..., every_voter=False)`` on the votes ``read_votes``
keeps (the function ``select_votes`` uses): an independent implementation, a
replay-order loop over every vote (numba) or sorted running sums, where the
engine counts with SQL window functions and streams the voters' votes by voter.
Random logs have a crowd that favours the pair's first model (so the test has a
history to compare with), honest voters, campaigners who vote for the second
model whatever the side, voters with exactly 4 or 5 votes, judges, flagged rows,
rows without a voter or a voter kind, tied timestamps, duplicated ids, two arenas,
and pairs shown in both orders. Flags are compared with the vote count at which
the test fired, under the default settings and under a lenient ``alpha`` that flags
honest voters too (so an off-by-one in any count moves some voter's result).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scale_logs import _SCHEMA, NOW_US, _row, damaged_log

from arena_core.integrity.anomaly import AnomalyParams, detect
from arena_core.scale.duck import DuckVotes
from arena_core.scale.flags import (
    MAX_HUMAN_VOTES,
    TooManyVotesError,
    check_size,
    flagged_in_batches,
    outcome_sql,
    pair_before_sql,
    unpack_counts,
    votes_to_test_sql,
)
from arena_core.scale.manifest import build_manifest
from arena_core.scale.python_engine import counts_from_votes, read_for_counts
from arena_core.scale.sources import resolve

#: Settings under which honest voters are flagged too: many flags, each sensitive to every count.
LENIENT = AnomalyParams(alpha=0.9, checks=(5, 6, 7, 8, 10, 12))
#: Pairs as shown (model_a, model_b): both orders of a pair, and a second arena.
_PAIRS = (("m1", "m2"), ("m2", "m1"), ("m3", "m1"), ("m2", "m3"), ("k2", "k1"))
_ARENA = {"k1": "tts-ja", "k2": "tts-ja"}
#: Who casts a row: honest voters, campaigners, no voter; the kind and flags of the row.
_WHO = st.sampled_from(["h1", "h2", "h3", "c1", "c2", None])
_KIND = st.sampled_from(["human"] * 6 + [None, "judge"])


def _vote(pair: tuple[str, str], for_first: bool, draw_tie: bool) -> str:
    """The vote string for a win of the pair's first model (by id) or its second, as shown."""
    if draw_tie:
        return "tie"
    first_shown_as_a = pair[0] < pair[1]
    return "a" if for_first == first_shown_as_a else "b"


def _crowd(seconds: int) -> list[dict]:
    """Voter-less votes before the random rows: the first model by id wins 3 in 4, else a tie."""
    rows = []
    for k in range(seconds):
        pair = _PAIRS[k % len(_PAIRS)]
        vote = _vote(pair, True, k % 4 == 3)
        rows.append(_row(f"crowd-{k:03d}", f"2025-01-04T00:{k // 60:02d}:{k % 60:02d}.000Z", *pair,
                         vote=vote, arena=_ARENA.get(pair[0], "tts-en"), voter=None))  # fmt: skip
    return rows


@st.composite
def random_rows(draw) -> list[dict]:
    n = draw(st.integers(10, 50))
    edge = draw(st.sampled_from([4, 5]))  # a campaigner with exactly 4 or 5 votes
    ids = draw(st.permutations(range(n + edge + 3)))  # id order is not file order
    rows = []
    for k in range(n + edge):
        who = "edge" if k >= n else draw(_WHO)
        pair = draw(st.sampled_from(_PAIRS))
        kind = draw(_KIND)
        campaign = who is not None and who[0] in "ce" and kind != "judge"
        vote = _vote(pair, not campaign and draw(st.booleans()), draw(st.integers(0, 5)) == 0)
        second = draw(st.integers(0, 8))  # few distinct times: ties decided by vote_id
        vote_id = f"v{ids[k] if draw(st.integers(0, 15)) else ids[0]:03d}"  # some ids repeat
        rows.append(_row(vote_id, f"2025-01-05T00:00:0{second}.000Z", *pair, vote=vote,
                         arena=_ARENA.get(pair[0], "tts-en"), voter=who,
                         voter_kind=kind, judge="j1" if kind == "judge" else None,
                         flags=["rate_limited"] if draw(st.integers(0, 9)) == 0 else []))  # fmt: skip
    return rows


def _write(root: Path, rows: list[dict], parts: int) -> None:
    """The rows in ``parts`` monthly-looking files under ``root/compacted``, with a manifest."""
    size = -(-len(rows) // parts)
    for k in range(parts):
        folder = root / "compacted" / f"2025-0{k + 1}"
        folder.mkdir(parents=True)
        chunk = rows[k * size : (k + 1) * size]
        pq.write_table(pa.Table.from_pylist(chunk, schema=_SCHEMA), folder / "part.parquet")
    build_manifest(root / "compacted", now_us=NOW_US)


def _streamed(duck: DuckVotes, params: AnomalyParams, batch_rows: int) -> dict[str, int]:
    sql = votes_to_test_sql("valid", params)
    return flagged_in_batches(duck.con.sql(sql).to_arrow_reader(batch_rows), params)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names])


@settings(
    max_examples=25,
    deadline=None,
    # The profile's suppressions too (too_slow on a busy machine): a list of our own replaces them.
    suppress_health_check=[
        *settings.default.suppress_health_check,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(rows=random_rows(), parts=st.integers(1, 3), crowd=st.sampled_from([0, 40, 150]))
def test_any_log_flags_the_voters_the_in_process_test_flags(tmp_path_factory, rows, parts, crowd):
    root = Path(tmp_path_factory.mktemp("flags"))
    _write(root, _crowd(crowd) + rows, parts)
    votes = read_for_counts(root, now_us=NOW_US)
    for params in (AnomalyParams(), LENIENT):
        expected = detect(votes, params, every_voter=False).flagged_voters
        for trust in (False, True):
            duck = DuckVotes(resolve(root), now_us=NOW_US, anomaly=params, trust_manifest=trust)
            assert duck.flagged_voters() == sorted(expected)
            assert _streamed(duck, params, 1 << 20) == expected
            if params == AnomalyParams():  # the counts' anomalous column uses the defaults
                assert _sorted(duck.counts()).equals(_sorted(counts_from_votes(votes)))
    shutil.rmtree(root)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The damaged log with 120 repeat voters (two campaigners), read both ways."""
    folder = damaged_log(tmp_path_factory.mktemp("votes"))
    votes = read_for_counts(folder, now_us=NOW_US)
    return votes, DuckVotes(resolve(folder), now_us=NOW_US, anomaly=LENIENT)


@pytest.mark.parametrize("batch_rows", [1, 2, 7, 50, 1 << 20])
def test_where_the_batches_split_the_votes_changes_nothing(synthetic, batch_rows):
    votes, duck = synthetic
    expected = detect(votes, LENIENT, every_voter=False).flagged_voters
    assert len(expected) >= 10  # lenient: many voters, each flagged at some count
    assert _streamed(duck, LENIENT, batch_rows) == expected
    assert duck.flagged_voters(batch_rows=batch_rows) == sorted(expected)


def test_the_campaigners_are_flagged_and_every_voters_human_votes_come_out(synthetic):
    votes, duck = synthetic
    flagged = detect(votes, every_voter=False).flagged_voters
    # The log's two campaigners (voters 0 and 1 of arena_core.scale.synthetic), by hand.
    assert {"0000000000000000", "000000009e3779b1"} <= set(flagged)
    tested = duck.con.sql(votes_to_test_sql("valid")).to_arrow_table()
    counted = """SELECT voter, count(*) FROM valid WHERE voter IS NOT NULL
        AND (voter_kind IS NULL OR voter_kind = 'human') GROUP BY voter"""
    by_voter = dict(duck.con.sql(counted).fetchall())  # apart from the window's query
    # Every voter's votes: those under the first checkpoint too (none in this log; the random
    # logs' voters with 4 votes come out and are never flagged, as detect() says).
    assert tested.num_rows == sum(by_voter.values())
    assert set(tested.column("voter").to_pylist()) == set(by_voter)


@pytest.mark.parametrize(
    ("vote", "model_a", "model_b", "code"),
    [("a", "m1", "m2", 0), ("b", "m1", "m2", 1), ("a", "m2", "m1", 1), ("b", "m2", "m1", 0),
     ("tie", "m2", "m1", 2), ("both_bad", "m2", "m1", 3)],
)  # fmt: skip
def test_outcomes_are_seen_from_the_pairs_first_model(vote, model_a, model_b, code):
    import duckdb

    got = duckdb.sql(f"SELECT {outcome_sql()} FROM (SELECT ? AS vote, ? AS model_a, ? AS model_b)",
                     params=[vote, model_a, model_b]).fetchall()  # fmt: skip
    assert got == [(code,)]


def test_packed_counts_unpack_to_their_words():
    from decimal import Decimal

    # Hand-worked: counts (3, 5, 7, 2) packed as 3 + 5 * 2^32 + 7 * 2^64 + 2 * 2^96.
    packed = 3 + 5 * 2**32 + 7 * 2**64 + 2 * 2**96
    column = pa.array([Decimal(0), Decimal(packed), Decimal(2**32 - 1)], pa.decimal128(38, 0))
    assert unpack_counts(column).tolist() == [[0, 0, 0, 0], [3, 5, 7, 2], [2**32 - 1, 0, 0, 0]]
    assert unpack_counts(column.slice(1, 1)).tolist() == [[3, 5, 7, 2]]  # an offset
    with pytest.raises(TypeError):
        unpack_counts(pa.array([1, 2]))


def test_the_engines_pack_each_outcome_in_its_own_word():
    import duckdb

    rows = "(VALUES (1, true, 0), (2, true, 1), (3, false, 1), (4, true, 3), (5, true, 3))"
    sql = f"""SELECT pair_before FROM (SELECT *, 'p' AS pair, 'v' || ts_us AS vote_id,
        {pair_before_sql()} FROM {rows} t(ts_us, eligible, outcome)) ORDER BY ts_us"""
    # Before each row, the eligible rows of each outcome (the third row is not eligible).
    expected = [[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 1]]
    assert unpack_counts(duckdb.sql(sql).to_arrow_table().column(0)).tolist() == expected


def test_a_log_beyond_the_packed_counts_is_refused():
    check_size(MAX_HUMAN_VOTES - 1)
    with pytest.raises(TooManyVotesError, match="exact below"):
        check_size(MAX_HUMAN_VOTES)
