"""The counts path gives the in-process board: DuckDB and the Python engine on a damaged log.

The reference is ``board_from_votes`` (every vote in memory, the path the Space
and the CLI have always used); the counts engines are independent SQL
implementations of its rules, so agreement on a log with every kind of bad row,
duplicate and excluded vote is the check. Boards are compared row for row with
``==`` on floats: identical, not just within 1e-6.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from scale_logs import NOW_US, damaged_log

from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.scale.board import board_from_counts, select_counts
from arena_core.scale.contract import CountsError, read_counts, write_counts
from arena_core.scale.duck import DuckVotes
from arena_core.scale.python_engine import counts_from_votes, read_for_counts, vote_stream
from arena_core.scale.sources import resolve
from arena_core.selection import Entrant
from arena_core.window import Window


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return damaged_log(tmp_path_factory.mktemp("votes"))


@pytest.fixture(scope="module")
def votes(log_dir):
    return read_for_counts(log_dir, now_us=NOW_US)


@pytest.fixture(scope="module")
def duck(log_dir):
    return DuckVotes(resolve(log_dir), now_us=NOW_US)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names])


def test_duckdb_counts_equal_the_readers_counts_and_skips(votes, duck):
    reference, counted = counts_from_votes(votes), duck.counts()
    assert _sorted(counted).equals(_sorted(reference))
    assert counted.schema.metadata == reference.schema.metadata
    # What the log holds, counted by hand from tests/scale_logs.py: one unreadable file, and
    # in the hand-made file two missing fields, one version, two bad votes (one is a
    # duplicate's first row), one voter kind, one same model, seven timestamps, one future.
    skipped = votes.skipped
    assert skipped["unreadable_file"] == 2 and skipped["bad_ts"] == 7
    assert skipped["bad_vote"] == 2 and skipped["future_ts"] == 1 and skipped["missing_field"] == 2


def test_duplicates_keep_the_first_row_by_time_then_file_order(duck):
    rows = duck.con.execute(
        "SELECT vote_id, vote, ts FROM valid WHERE vote_id LIKE 'dup-%' ORDER BY vote_id"
    ).fetchall()
    assert rows == [
        ("dup-invalid", "tie", "2025-07-06T01:00:00Z"),  # its first row was invalid
        ("dup-later", "b", "2025-06-06T00:00:00Z"),  # the earlier row, though written later
        ("dup-same", "a", "2025-06-06T00:00:00Z"),  # same time: the first file's row
    ]


def test_the_anomalous_voter_test_flags_the_same_voters(votes, duck):
    from arena_core.integrity.anomaly import detect

    expected = sorted(detect(votes, every_voter=False).flagged_voters)
    # The public call, not the table it fills when a count first needs it: read that
    # table, this test passed only after another test had counted (it failed alone).
    assert sorted(duck.flagged_voters()) == expected
    # The log's two campaigners (voters 0 and 1 of arena_core.scale.synthetic) are among them.
    assert {"0000000000000000", "000000009e3779b1"} <= set(expected)


SETTINGS = [
    {},
    {"category": "en"},
    {"params": BoardParams(voter_kind="judge")},
    {"params": BoardParams(voter_kind="judge", judge="j1")},
    {"params": BoardParams(voter_kind=None, include_flagged=True)},
    {"params": BoardParams(prior_weight=0.0, bootstrap_rounds=20, method="elo")},
    {"entrants": [Entrant("m1", "M one"), Entrant("m2", "M two"),
                  Entrant("m3", "M three", prior_rating=1100.0, prior_source="paper")]},
]  # fmt: skip


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: ",".join(s) or "default")
@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_board_from_counts_is_the_in_process_board(votes, duck, setting, engine):
    expected = board_from_votes(votes, "tts-en", **setting)
    if engine == "python":
        counts, stream = counts_from_votes(votes), vote_stream(votes)
    else:
        counts = duck.counts()

        def stream(query):
            return duck.stream(query, 1_700_000_000_000_000, NOW_US)

    got = board_from_counts(counts, "tts-en", stream, **setting)
    assert got.rows == expected.rows
    assert got.to_json() == expected.to_json()


def test_the_stream_runs_month_by_month_in_replay_order(votes, duck):
    query = select_counts(duck.counts(), "tts-en").query
    months = list(duck.stream(query, 1_740_787_200_000_000, 1_751_763_600_000_000))
    expected = list(vote_stream(votes)(query))
    joined = pa.Table.from_batches([b for b in months if b.num_rows])
    assert joined.equals(pa.Table.from_batches(expected))


def test_a_stream_that_disagrees_with_the_counts_is_refused(votes):
    counts = counts_from_votes(votes)
    whole = vote_stream(votes)

    def one_short(query):
        batches = list(whole(query))
        yield batches[0].slice(1)  # the first vote is missing
        yield from batches[1:]

    with pytest.raises(CountsError, match="disagree"):
        board_from_counts(counts, "tts-en", one_short)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"window": Window(since_us=0)}, "since"),
     ({"params": BoardParams(half_life_days=30.0)}, "half-life")],
)  # fmt: skip
def test_what_counts_cannot_answer_is_refused(votes, kwargs, message):
    with pytest.raises(CountsError, match=message):
        board_from_counts(counts_from_votes(votes), "tts-en", vote_stream(votes), **kwargs)


def test_a_counts_file_round_trips_and_another_file_is_refused(votes, tmp_path, log_dir):
    counts = counts_from_votes(votes)
    path = write_counts(counts, tmp_path / "counts.parquet")
    assert read_counts(path).equals(counts)
    assert read_counts(path).schema.metadata == counts.schema.metadata
    with pytest.raises(CountsError, match="not a counts file"):
        read_counts(log_dir / "hand" / "a.parquet")


def test_an_empty_folder_gives_an_empty_counts_table(tmp_path):
    counts = DuckVotes(resolve(tmp_path), now_us=NOW_US).counts()
    assert counts.num_rows == 0
    assert _sorted(counts).equals(_sorted(counts_from_votes(read_for_counts(tmp_path))))


def test_a_local_glob_is_read_like_its_folder(log_dir):
    from arena_core.scale.contract import skipped_of

    hand = log_dir / "hand"
    globbed = DuckVotes(resolve([f"{hand}/*.parquet"]), now_us=NOW_US).counts()
    expected = counts_from_votes(read_for_counts(hand, now_us=NOW_US))
    assert _sorted(globbed).equals(_sorted(expected))
    assert (
        skipped_of(globbed)["unreadable_file"] == 2
    )  # the mistyped files, as read_votes skips them


def test_a_folder_named_like_a_glob_or_with_a_quote_is_read_as_a_folder(log_dir, votes, tmp_path):
    """``v[1]`` was taken for a glob (matching nothing: 0 votes, exit 0), and a quote in
    a path must not break DuckDB's SQL."""
    import shutil

    odd = tmp_path / "v[1] it's *"
    shutil.copytree(log_dir, odd)
    counted = DuckVotes(resolve(odd), now_us=NOW_US).counts()
    assert _sorted(counted).equals(_sorted(counts_from_votes(votes)))
    assert not resolve(odd).patterns


def _tampered(counts: pa.Table, column: str, values) -> pa.Table:
    return counts.set_column(counts.schema.get_field_index(column), column,
                             pa.array(values, counts.schema.field(column).type))  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [(lambda t: _tampered(t, "votes", [-v for v in t["votes"].to_pylist()]), "out of range"),
     (lambda t: _tampered(t, "votes", [0, *t["votes"].to_pylist()[1:]]), "out of range"),
     (lambda t: _tampered(t, "votes", [2 ** 62, *t["votes"].to_pylist()[1:]]), "out of range"),
     (lambda t: _tampered(t, "model_b", t["model_a"].to_pylist()), "against itself"),
     (lambda t: _tampered(t, "first_ts_us", [2**62] * t.num_rows), "first vote comes after"),
     (lambda t: _tampered(t, "votes", [None, *t["votes"].to_pylist()[1:]]), "(missing values|with null values)")],
)  # fmt: skip
def test_a_counts_file_out_of_contract_is_refused_not_rated(votes, tmp_path, change, message):
    """A counts file from elsewhere (a Spark job of someone's own, a hand edit) could rate
    negative battles or a model against itself; each is refused with what is wrong."""
    import pyarrow.parquet as pq

    counts = counts_from_votes(votes)
    path = tmp_path / "counts.parquet"
    pq.write_table(change(counts).replace_schema_metadata(counts.schema.metadata), path)
    with pytest.raises(CountsError, match=message):
        read_counts(path)


@pytest.mark.parametrize("skipped", [b'{"y": "abc"}', b"[1, 2]", b'{"y": -1}', b"not json"])
def test_a_counts_file_with_bad_skip_metadata_is_refused(votes, tmp_path, skipped):
    import pyarrow.parquet as pq

    counts = counts_from_votes(votes)
    meta = {**counts.schema.metadata, b"arena.skipped": skipped}
    pq.write_table(counts.replace_schema_metadata(meta), tmp_path / "c.parquet")
    with pytest.raises(CountsError, match="skipped rows"):
        read_counts(tmp_path / "c.parquet")
