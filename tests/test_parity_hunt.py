"""The same votes give the same board on every path: a hunt for inputs where they did not.

A researcher replaying the vote dataset is promised the board of the in-process
reader from DuckDB's counts (``--engine duckdb``), from a counts file
(``counts --out`` then ``leaderboard --counts``) and in-process alike. Each test
here is an input one path read differently, or choked on, before the fix it names:

- a timestamp whose local year is 0000 but whose UTC instant is in year 1 (the
  contract's range is years 1 to 9999 in UTC): Arrow and DuckDB dated it, Python's
  parser refused it, so the in-process reader counted it or not depending on
  another row of its column (a 30 February sent the whole column to Python), and
  DuckDB always counted it, but its Elo stream did not;
- a Parquet file without a column (``pd.DataFrame().to_parquet``): no votes for the
  in-process reader, a DuckDB error stopping every counts path;
- a counts file written with a clock before 1970 or after year 5138 (18 digits of
  microseconds): ``counts`` wrote it, ``leaderboard --counts`` refused its metadata;
- DuckDB's Elo stream ran one query per calendar month from the first vote to the
  last, so one vote dated 0001-01-01 (``datetime.min``, a writer's placeholder)
  cost 24,000 queries (about six minutes), and it left out votes of the last
  second of year 9999 (the board then refused as "the stream and the counts disagree").
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scale_logs import _SCHEMA, NOW_US, _row

from arena_core.cli import main
from arena_core.leaderboard import board_from_votes
from arena_core.scale.board import board_from_counts, select_counts
from arena_core.scale.duck import DuckVotes
from arena_core.scale.python_engine import counts_from_votes, read_for_counts
from arena_core.scale.sources import resolve
from arena_core.snapshots.source import board_part
from arena_core.votes.read import read_votes
from arena_core.votes.reasons import BAD_TS
from arena_core.votes.schema import TS_MAX_US

#: Votes of one arena, three models, every outcome.
GOOD = [_row(f"ok-{k}", f"2025-06-01T10:00:{k:02d}Z", *[("m1", "m2"), ("m2", "m3")][k % 2],
             ["a", "b", "tie", "both_bad"][k % 4]) for k in range(12)]  # fmt: skip


def _write(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=_SCHEMA), path)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names])


def _board(capsys, *args) -> dict:
    """The printed board's own keys (exit status 0 required)."""
    code = main(["leaderboard", "--arena", "tts-en", "--format", "json", *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return board_part(json.loads(captured.out))


@pytest.mark.parametrize(
    "neighbours", [[], ["2025-02-30T00:00:00Z"]], ids=["alone", "beside-feb-30"]
)
def test_a_local_year_0000_in_year_1_utc_counts_on_every_engine_whatever_its_neighbours(
    tmp_path, neighbours
):
    year_0 = _row("year-0", "0000-12-31T23:00:00-01:00")  # 0001-01-01T00:00:00Z in UTC
    odd = [_row(f"nb-{k}", ts) for k, ts in enumerate(neighbours)]
    _write(tmp_path / "a.parquet", [*GOOD, year_0, *odd])
    votes = read_for_counts(tmp_path, now_us=NOW_US)
    assert votes.skipped[BAD_TS] == len(odd) and len(votes) == len(GOOD) + 1
    duck = DuckVotes(resolve(tmp_path), now_us=NOW_US).counts()
    assert _sorted(duck).equals(_sorted(counts_from_votes(votes)))
    assert duck.schema.metadata == counts_from_votes(votes).schema.metadata


def test_a_parquet_file_without_columns_is_no_votes_on_every_path(tmp_path, capsys):
    folder = tmp_path / "votes"
    _write(folder / "a.parquet", GOOD)
    pd.DataFrame().to_parquet(folder / "b.parquet")  # a script's empty frame, no column
    assert pq.read_schema(folder / "b.parquet").names == []
    votes = ["--votes", str(folder), "--read-at", "2026-01-01T00:00:00Z"]
    reference = _board(capsys, *votes, "--engine", "python")
    assert _board(capsys, *votes, "--engine", "duckdb") == reference
    out = tmp_path / "counts.parquet"
    assert main(["counts", "--engine", "duckdb", *votes, "--out", str(out)]) == 0
    capsys.readouterr()
    assert _board(capsys, *votes, "--counts", str(out)) == reference


@pytest.mark.parametrize(
    ("stamp", "clock"),
    [("1969-06-01T00:00:00Z", "1969-07-01T00:00:00Z"),  # negative microseconds
     ("9000-06-01T00:00:00Z", "9000-07-01T00:00:00Z")],  # 18 digits of microseconds
    ids=["before-1970", "year-9000"],
)  # fmt: skip
def test_a_counts_file_keeps_any_clock_of_the_years_1_to_9999(tmp_path, capsys, stamp, clock):
    folder = tmp_path / "votes"
    _write(folder / "a.parquet", [{**r, "ts": stamp} for r in GOOD])
    votes, at = ["--votes", str(folder)], ["--read-at", clock]
    reference = _board(capsys, *votes, *at, "--engine", "python")
    out = tmp_path / "counts.parquet"
    assert main(["counts", "--engine", "python", *votes, *at, "--out", str(out)]) == 0
    capsys.readouterr()
    assert _board(capsys, *votes, *at, "--counts", str(out)) == reference
    code = main(["leaderboard", "--arena", "tts-en", "--format", "json", "--counts", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err  # the counts alone: the clock they were judged by
    assert json.loads(printed.out)["revision"]["read_at"] == clock.replace("Z", ".000000Z")


class _Counted:
    """A DuckDB connection whose queries are counted, stopping a runaway loop early."""

    def __init__(self, con, limit: int):
        self.con, self.limit, self.queries = con, limit, 0

    def sql(self, *args, **kwargs):
        self.queries += 1
        assert self.queries <= self.limit, f"more than {self.limit} queries for a few votes"
        return self.con.sql(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_the_duckdb_stream_skips_empty_months_and_reaches_year_9999(tmp_path):
    stamps = ["0000-12-31T23:30:00-01:00", "0001-01-01T00:00:00Z", "2025-06-01T10:00:00Z", "2025-06-02T10:00:00+14:00",
              "2025-09-01T00:00:00Z", "9999-12-31T23:59:59.5Z"]  # fmt: skip
    rows = [{**r, "ts": stamps[k % len(stamps)], "vote_id": f"v-{k}"} for k, r in enumerate(GOOD)]
    _write(tmp_path / "a.parquet", rows)
    votes = read_votes(tmp_path, now_us=TS_MAX_US)
    duck = DuckVotes(resolve(tmp_path), now_us=TS_MAX_US)
    counts = duck.counts()
    assert _sorted(counts).equals(_sorted(counts_from_votes(votes)))
    first, last = (int(pa.compute.min(counts["first_ts_us"]).as_py()),
                   int(pa.compute.max(counts["last_ts_us"]).as_py()))  # fmt: skip
    counted = duck.con = _Counted(duck.con, limit=30)

    def stream(query):
        return duck.stream(query, first, last)

    got = board_from_counts(counts, "tts-en", stream, params=None)
    assert got.to_json() == board_from_votes(votes, "tts-en").to_json()
    query = select_counts(counts, "tts-en").query
    streamed = pa.Table.from_batches([b for b in duck.stream(query, first, last) if b.num_rows])
    assert streamed.num_rows == len(rows)
    assert counted.queries <= 30
