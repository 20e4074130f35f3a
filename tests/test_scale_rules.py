"""The pieces of the counts path: streamed Elo, the timestamp rule in SQL, sources, windows."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core import cli
from arena_core.ratings import elo as elo_module
from arena_core.ratings.elo import COMPILED_FROM, EloParams, sequential_elo
from arena_core.scale import duck
from arena_core.scale.board import streaming_elo
from arena_core.scale.connection import EngineError, connect, load_remote
from arena_core.scale.duck import month_windows
from arena_core.scale.rules import DUCKDB, ts_us_sql
from arena_core.scale.sources import (
    SourceError,
    file_order,
    hf_pattern,
    parquet_only_gap,
    resolve,
)
from arena_core.votes.clean import clean
from arena_core.votes.jsonl import parse_jsonl
from arena_core.votes.parquet import parquet_bytes
from arena_core.votes.read import vote_files
from arena_core.votes.schema import ARROW_SCHEMA, TS_MAX_US


@st.composite
def replays(draw):
    n = draw(st.integers(2, 6))
    votes = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n - 1),
                                    st.integers(0, 3)), max_size=60))  # fmt: skip
    a = np.array([v[0] for v in votes], dtype=np.int64)
    b = (a + np.array([v[1] for v in votes], dtype=np.int64)) % n
    outcome = np.array([v[2] for v in votes], dtype=np.int64)
    cuts = sorted(draw(st.lists(st.integers(0, len(votes)), max_size=4)))
    prior = draw(st.lists(st.floats(800, 1200), min_size=n, max_size=n))
    return n, a, b, outcome, cuts, prior


def _batches(a, b, outcome, cuts):
    edges = [0, *cuts, len(a)]
    return [(a[lo:hi], b[lo:hi], outcome[lo:hi]) for lo, hi in pairwise(edges)]


@pytest.mark.parametrize("loop", ["compiled", "plain"])
@settings(max_examples=200, deadline=None)
@given(replays())
def test_streamed_elo_is_bit_identical_to_one_replay(loop, replay):
    """Either loop of the stream (the compiled one, or the plain ``replay_loop`` where
    llvmlite is missing: untested until session 32's review) equals one replay."""
    n, a, b, outcome, cuts, prior = replay
    params = EloParams()
    whole = sequential_elo(n, (a, b, outcome), prior, params)
    played = np.bincount(np.concatenate([a, b]), minlength=n)
    with pytest.MonkeyPatch.context() as patch:
        if loop == "plain":
            patch.setattr(elo_module, "compiled_replay", lambda: None)
        streamed = streaming_elo(
            n, _batches(a, b, outcome, cuts), prior, params, int(played.max(initial=0))
        )
    assert streamed.ratings == whole.ratings  # exact floats
    assert streamed.battles == whole.battles


def test_streamed_elo_matches_the_compiled_replay_of_many_votes():
    rng = np.random.default_rng(7)
    n, size = 12, COMPILED_FROM + 1000
    a = rng.integers(0, n, size)
    b = (a + rng.integers(1, n, size)) % n
    outcome = rng.integers(0, 4, size)
    whole = sequential_elo(n, (a, b, outcome))
    played = np.bincount(np.concatenate([a, b]), minlength=n)
    cuts = [1, 777, 30_000, 50_500]
    streamed = streaming_elo(n, _batches(a, b, outcome, cuts), None, EloParams(), int(played.max()))
    assert streamed.ratings == whole.ratings


_DIGITS = st.integers(0, 99).map(lambda v: f"{v:02d}")
_TS = st.builds(
    lambda y, mo, d, sep, h, mi, s, frac, zone: f"{y:04d}-{mo}-{d}{sep}{h}:{mi}:{s}{frac}{zone}",
    st.sampled_from([1, 2, 1970, 2000, 2024, 2025, 9999]), _DIGITS, _DIGITS,
    st.sampled_from(["T", "T", "T", " ", "t"]), _DIGITS, _DIGITS, _DIGITS,
    st.sampled_from(["", ".5", ".123", ".123456", ".1234567", "."]),
    st.sampled_from(["Z", "Z", "+05:30", "-01:00", "+24:00", "-23:59", "", "z", "+0530", "Z\n"]),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(_TS, min_size=1, max_size=40))
def test_duckdb_accepts_and_dates_timestamps_as_the_reader_does(stamps):
    rows = [{"schema_version": 3, "vote_id": str(k), "ts": ts, "arena": "x", "model_a": "m1",
             "model_b": "m2", "vote": "a"} for k, ts in enumerate(stamps)]  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
    kept = clean(table, Counter(), now_us=TS_MAX_US)
    expected = dict(zip(kept.column("vote_id").to_pylist(), kept.ts_us.tolist(), strict=True))
    con = connect()
    con.register("raw", pa.table({"vote_id": table.column("vote_id"), "ts": table.column("ts")}))
    got = con.execute(f"SELECT vote_id, {ts_us_sql(DUCKDB)} FROM raw").fetchall()
    assert {k: v for k, v in got if v is not None} == expected


def test_month_windows_are_calendar_months_in_utc():
    first = 1_736_899_200_000_000  # 2025-01-15T00:00:00Z
    last = 1_740_787_200_000_000  # 2025-03-01T00:00:00Z
    assert month_windows(first, last) == [
        (1_735_689_600_000_000, 1_738_368_000_000_000),  # January
        (1_738_368_000_000_000, 1_740_787_200_000_000),  # February
        (1_740_787_200_000_000, 1_743_465_600_000_000),  # March
    ]


@pytest.mark.parametrize(
    ("url", "pattern"),
    [("hf://datasets/org/votes", "hf://datasets/org/votes/**/*.parquet"),
     ("hf://datasets/org/votes/data/", "hf://datasets/org/votes/data/**/*.parquet"),
     ("hf://datasets/org/votes@v1.0/compacted", "hf://datasets/org/votes@v1.0/compacted/**/*.parquet"),
     ("hf://datasets/org/votes/compacted/2026-*/*.parquet",
      "hf://datasets/org/votes/compacted/2026-*/*.parquet"),
     ("hf://datasets/org/votes/a.parquet", "hf://datasets/org/votes/a.parquet")],
)  # fmt: skip
def test_hub_paths_become_parquet_patterns(url, pattern):
    # No network here: this checks how hf:// paths are read, not the Hub itself.
    assert hf_pattern(url) == pattern
    assert resolve([url]).patterns == (pattern,)


@pytest.mark.parametrize(
    ("url", "replay"),
    [("hf://datasets/org/votes@abc123", "leaderboard --repo org/votes --revision abc123"),
     ("hf://datasets/org/votes/data/", "leaderboard --repo org/votes"),
     ("s3://bucket/votes", "download s3://bucket/votes and read it with --engine python")],
)  # fmt: skip
def test_a_remote_folder_read_as_parquet_only_says_what_its_skip_counts_leave_out(url, replay):
    """A push keeps its damaged lines beside its Parquet file as *.damaged.jsonl, which a
    remote folder's Parquet pattern never reads: the board's skip counts silently differed
    from the repo's replay. The gap is named, with the command that reads every file."""
    gap = parquet_only_gap(resolve([url]))
    assert gap is not None and url in gap and "*.damaged.jsonl" in gap and replay in gap


@pytest.mark.parametrize("url", ["hf://datasets/org/votes/compacted/2026-*/*.parquet",
                                 "hf://datasets/org/votes/a.parquet"])  # fmt: skip
def test_parquet_files_or_globs_asked_for_by_name_need_no_warning(url, tmp_path):
    assert parquet_only_gap(resolve([url])) is None


@pytest.fixture
def pushed_folder(tmp_path, monkeypatch) -> Path:
    """A push as the Space makes it, a Parquet file and its damaged line beside it, standing
    for ``hf://datasets/org/votes@abc``: DuckDB reads that URL's Parquet files from here
    (no Hub, no httpfs on the test machine), the in-process reader the whole folder."""
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"schema_version": 4, "vote_id": f"v{k}", "ts": f"2026-11-01T00:00:0{k}Z",
             "arena": "a", "model_a": "m1", "model_b": "m2", "vote": "ab"[k % 2]}
            for k in range(4)]  # fmt: skip
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows) + b'{"vote_id":"half\n'
    skipped = Counter()
    (folder / "votes-p-000001.parquet").write_bytes(parquet_bytes(parse_jsonl(data, skipped)))
    (folder / "votes-p-000001.damaged.jsonl").write_bytes(b'{"vote_id":"half\n')
    local = resolve([folder / "votes-p-000001.parquet"])

    class HubAsLocal(duck.DuckVotes):
        def __init__(self, sources, **kwargs):
            assert sources.folders == ("hf://datasets/org/votes@abc",)
            super().__init__(local, **kwargs)

    monkeypatch.setattr(duck, "DuckVotes", HubAsLocal)
    return folder


@pytest.mark.parametrize("command", ["counts", "leaderboard"])
def test_a_hub_folder_read_by_duckdb_warns_of_the_skip_counts_it_leaves_out(
    pushed_folder, tmp_path, caplog, capsys, command
):
    """DuckDB read hf:// as its Parquet files: the damaged line the repo's replay skips and
    counts was silently left out of the skip counts. The command now says so, and names
    the one that counts it."""
    assert cli.main(["leaderboard", "--votes", str(pushed_folder), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == {"invalid_json": 1}
    out = ["--out", str(tmp_path / "c.parquet")] if command == "counts" else ["--format", "json"]
    url = "hf://datasets/org/votes@abc"
    assert cli.main([command, "--engine", "duckdb", "--votes", url, *out]) == 0
    if command == "leaderboard":
        assert json.loads(capsys.readouterr().out)["skipped"] == {}  # the line is not read
    warning = " ".join(caplog.text.split())
    assert f"{url}: only the Parquet files are read" in warning and "*.damaged.jsonl" in warning
    assert "leaderboard --repo org/votes --revision abc" in warning


@pytest.mark.parametrize("url", ["hf://models/org/tts", "hf://org/votes", "hf://spaces/o/s"])
def test_paths_that_are_not_a_hub_dataset_are_refused(url):
    with pytest.raises(SourceError, match="hf://datasets/"):
        resolve([url])


def test_jsonl_votes_are_refused_with_the_engine_that_reads_them(tmp_path):
    (tmp_path / "shard.jsonl").write_text("{}\n")
    with pytest.raises(SourceError, match="--engine python"):
        resolve([tmp_path])
    with pytest.raises(SourceError, match="--engine python"):
        resolve(["hf://datasets/org/votes/shard.jsonl"])


def test_without_httpfs_a_remote_path_gets_a_clear_error(tmp_path):
    # No network and an empty extension folder: DuckDB must not download, and says what to do.
    con = connect()
    con.execute(f"SET extension_directory = '{tmp_path}'")
    with pytest.raises(EngineError, match="INSTALL httpfs"):
        load_remote(con)


def test_patterns_are_ordered_like_a_folder_read_by_read_votes(tmp_path):
    names = ["a/b.parquet", "a-c.parquet", "a/a.parquet", "b.parquet"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    expected = [str(p) for p, _ in vote_files(tmp_path)]
    assert file_order([str(tmp_path / n) for n in names]) == expected
    assert list(resolve([tmp_path]).files) == [str(p) for p in map(type(tmp_path), expected)]


def test_duckdb_spills_into_a_folder_of_its_own_removed_with_the_connection(tmp_path, monkeypatch):
    """Without a spill folder, DuckDB would spill into ``.tmp`` of the current folder (a
    Space's app folder, a checkout); each connection gets one under TMPDIR instead."""
    import gc
    import tempfile

    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir(), temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    con = connect()
    con.execute("SET memory_limit = '40MB'")
    # Far more than 40 MB: DuckDB must spill the table, then sort it.
    con.execute("CREATE TEMP TABLE t AS SELECT range AS i, random() AS r FROM range(6000000)")
    assert con.execute("SELECT sum(i) FROM (SELECT i FROM t ORDER BY r)").fetchone() == (
        17_999_997_000_000,
    )
    spilled = [
        row[0] for row in con.execute("SELECT path FROM duckdb_temporary_files()").fetchall()
    ]
    assert spilled, "the query did not spill: the test would prove nothing"
    (folder,) = {str(Path(p).parent) for p in spilled}
    assert Path(folder).parent == temp and Path(folder).name.startswith("arena-duckdb-spill-")
    assert list(work.iterdir()) == []  # no ./.tmp
    other = connect()  # another connection (or process) spills elsewhere
    assert other.execute("SELECT current_setting('temp_directory')").fetchone()[0] != folder
    con.close(), other.close()
    del con, other
    gc.collect()
    assert list(temp.iterdir()) == []


def test_a_spill_folder_given_is_used_as_it_is(tmp_path):
    con = connect(str(tmp_path / "it's here"))
    assert con.execute("SELECT current_setting('temp_directory')").fetchone()[0] == str(
        tmp_path / "it's here"
    )
    con.close()
