"""The compaction manifest: DuckDB skips the checks compaction made; counts and stream stay exact.

The reference is the same engine told to ignore manifests (``trust_manifest=False``),
itself checked against the in-process reader in ``test_scale_engines.py``. Counts
tables are compared whole (rows, order and the skipped rows in their metadata).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scale_logs import _SCHEMA, NOW_US, _row, damaged_log

import arena_core.scale.manifest as manifest_module
from arena_core.scale.board import BoardQuery
from arena_core.scale.duck import DuckVotes
from arena_core.scale.manifest import MANIFEST_NAME, build_manifest, rules_fingerprint
from arena_core.scale.sources import Sources, resolve


def counts(source, *, trust: bool, now_us: int = NOW_US) -> tuple[pa.Table, DuckVotes]:
    duck = DuckVotes(source if isinstance(source, Sources) else resolve(source), now_us=now_us,
                     trust_manifest=trust)  # fmt: skip
    return duck.counts(), duck


def stream(duck: DuckVotes, counts: pa.Table) -> list[dict]:
    """The Elo streams of the arena's votes, with and without flagged ones, in replay order,
    over the months the counts span (as the leaderboard command asks for them)."""
    if not counts.num_rows:
        return []
    models = set(counts.column("model_a").to_pylist()) | set(counts.column("model_b").to_pylist())
    first, last = pc.min(counts["first_ts_us"]).as_py(), pc.max(counts["last_ts_us"]).as_py()
    rows = []
    for include_flagged in (True, False):
        query = BoardQuery("tts-en", None, None, None, include_flagged, tuple(sorted(models)))
        rows += [row for batch in duck.stream(query, first, last) for row in batch.to_pylist()]
    return rows


def assert_exact(source, *, trusted: int | None = None, now_us: int = NOW_US) -> None:
    """Counts (and the Elo stream) with the manifest equal those without, table for table."""
    expected, slow = counts(source, trust=False, now_us=now_us)
    got, duck = counts(source, trust=True, now_us=now_us)
    assert got.equals(expected) and got.schema.metadata == expected.schema.metadata
    assert stream(duck, got) == stream(slow, expected)
    if trusted is not None:
        assert len(duck.trusted.ranks) == trusted


@pytest.fixture
def log_dir(tmp_path):
    """The damaged hand-made files, and three synthetic months with a manifest."""
    folder = damaged_log(tmp_path / "votes")
    assert build_manifest(folder / "synthetic" / "compacted", now_us=NOW_US) is not None
    return folder


def test_the_manifest_names_each_part_with_its_digest_and_duplicates(log_dir):
    manifest = json.loads((log_dir / "synthetic" / "compacted" / MANIFEST_NAME).read_text())
    assert manifest["rules"] == rules_fingerprint()
    assert [p["path"] for p in manifest["parts"]] == [
        "2025-03/part-0000.parquet", "2025-04/part-0000.parquet", "2025-05/part-0000.parquet"]  # fmt: skip
    assert sum(p["rows"] for p in manifest["parts"]) == 6000
    assert {p["ts_width"] for p in manifest["parts"]} == {len("2025-03-01T00:00:00.000Z")}
    assert manifest["duplicates"]  # the generator repeats ids: each group lists every row
    assert all(len(members) >= 2 for _, members in manifest["duplicates"])


def test_counts_with_the_manifest_equal_counts_without(log_dir):
    assert_exact(log_dir, trusted=3)  # with the damaged files as the untrusted tail
    assert_exact(log_dir / "synthetic", trusted=3)
    assert_exact(log_dir / "synthetic" / "compacted" / "2025-04", trusted=1)  # a subset


def test_tail_rows_that_repeat_a_parts_id_are_ranked_exactly(log_dir):
    """A tail row with a part's id, earlier (it wins) or later (it loses) than the part's row."""
    part = pq.read_table(log_dir / "synthetic" / "compacted" / "2025-04" / "part-0000.parquet")
    first, second = part.slice(5, 1).to_pylist()[0], part.slice(9, 1).to_pylist()[0]
    tail = [dict(first, ts="2025-03-31T00:00:00Z", vote="tie"),  # earlier: replaces the part's
            dict(second, ts="2025-06-01T00:00:00Z", vote="tie")]  # later: dropped  # fmt: skip
    pq.write_table(pa.Table.from_pylist(tail, schema=part.schema), log_dir / "tail.parquet")
    assert_exact(log_dir, trusted=3)
    got, _ = counts(log_dir, trust=True)
    assert json.loads(got.schema.metadata[b"arena.skipped"])["duplicate_vote_id"] >= 2


def test_a_changed_part_is_read_the_slow_way(log_dir, caplog):
    path = log_dir / "synthetic" / "compacted" / "2025-04" / "part-0000.parquet"
    table = pq.read_table(path)
    votes = table.column("vote").to_pylist()
    votes[0] = "bogus" if votes[0] != "bogus" else "a"
    pq.write_table(table.set_column(table.schema.get_field_index("vote"), "vote",
                                    pa.array(votes)), path)  # fmt: skip
    with caplog.at_level(logging.WARNING):
        assert_exact(log_dir / "synthetic", trusted=2)


def test_a_part_with_its_size_but_not_its_bytes_is_caught_by_the_digest(log_dir, monkeypatch):
    manifest_path = log_dir / "synthetic" / "compacted" / MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    manifest["parts"][1]["sha256"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    assert_exact(log_dir / "synthetic", trusted=2)


def test_a_manifest_of_other_rules_or_layout_or_a_broken_one_is_ignored(log_dir, monkeypatch):
    path = log_dir / "synthetic" / "compacted" / MANIFEST_NAME
    monkeypatch.setattr(manifest_module, "rules_fingerprint", lambda: "another-rule-set")
    assert_exact(log_dir / "synthetic", trusted=0)
    monkeypatch.undo()
    manifest = json.loads(path.read_text())
    for broken in ({**manifest, "manifest_version": 99}, {**manifest, "parts": [{"path": 1}]},
                   [1, 2]):  # fmt: skip
        path.write_text(json.dumps(broken))
        assert_exact(log_dir / "synthetic", trusted=0)
    path.write_text("{not json")
    assert_exact(log_dir / "synthetic", trusted=0)


def test_a_reader_clock_before_a_parts_last_vote_judges_it_row_by_row(log_dir):
    april_end = 1_746_057_600_000_000  # 2025-05-01T00:00:00Z: May's part has later votes
    assert_exact(log_dir / "synthetic", trusted=2, now_us=april_end - 20 * 60 * 1_000_000)


def test_parts_given_out_of_the_manifests_order_are_not_trusted(log_dir):
    months = sorted((log_dir / "synthetic" / "compacted").glob("*/part-0000.parquet"))
    reverse = Sources(tuple((str(p), False) for p in reversed(months)))
    assert_exact(reverse, trusted=0)


def test_a_part_with_a_bad_row_is_left_out_of_the_manifest(tmp_path):
    compacted = tmp_path / "compacted"
    rows = [_row("x-1", "2025-06-01T10:00:00.000Z"), _row("x-2", "2025-06-01T10:00:01.000Z")]
    bad = [_row("y-1", "2025-07-01T10:00:00.000Z"), _row("y-2", "2025-07-01T10:00:00Z", vote="?")]
    for month, part in (("2025-06", rows), ("2025-07", bad)):
        (compacted / month).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(part, schema=_SCHEMA), compacted / month / "p.parquet")
    manifest = json.loads(build_manifest(compacted, now_us=NOW_US).read_text())
    assert [p["path"] for p in manifest["parts"]] == ["2025-06/p.parquet"]
    assert_exact(tmp_path, trusted=1)


# -- any log: parts and a tail with repeated ids, ties, bad rows, any subset of files -------

_IDS = st.sampled_from([f"v{k}" for k in range(12)])
_TIMES = st.sampled_from(["2025-01-05T00:00:00.000Z", "2025-01-05T00:00:01.000Z",
                          "2025-02-05T00:00:00.000Z", "2025-01-05T00:00:00Z",
                          "2025-01-05T01:00:00.000+01:00"])  # fmt: skip
_ROWS = st.builds(lambda vote_id, ts, vote, pair: _row(vote_id, ts, *pair, vote=vote), _IDS,
                  _TIMES, st.sampled_from(["a", "b", "tie"] * 4 + ["bogus"]),
                  st.sampled_from([("m1", "m2"), ("m2", "m3"), ("m3", "m1")]))  # fmt: skip


@settings(
    max_examples=30,
    deadline=None,
    # The profile's suppressions too (too_slow on a busy machine): a list of our own replaces them.
    suppress_health_check=[
        *settings.default.suppress_health_check,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(parts=st.lists(st.lists(_ROWS, min_size=1, max_size=8), min_size=1, max_size=4),
       tail=st.lists(st.lists(_ROWS, min_size=1, max_size=6), max_size=2),
       keep=st.lists(st.booleans(), min_size=6, max_size=6))  # fmt: skip
def test_any_log_counts_the_same_with_and_without_the_manifest(tmp_path_factory, parts, tail, keep):
    root = Path(tmp_path_factory.mktemp("any"))
    compacted = root / "compacted"
    for k, rows in enumerate(parts):
        (compacted / f"2025-0{k + 1}").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=_SCHEMA),
                       compacted / f"2025-0{k + 1}" / "part.parquet")  # fmt: skip
    build_manifest(compacted, now_us=NOW_US)
    for k, rows in enumerate(tail):
        pq.write_table(pa.Table.from_pylist(rows, schema=_SCHEMA), root / f"tail-{k}.parquet")
    assert_exact(root)
    files = sorted(compacted.glob("*/part.parquet")) + sorted(root.glob("tail-*.parquet"))
    chosen = [f for f, k in zip(files, keep + [True] * len(files), strict=False) if k]
    if chosen:
        assert_exact(Sources(tuple((str(f), False) for f in chosen)))
    shutil.rmtree(root)


def test_building_a_manifest_never_runs_the_anomalous_voter_test(tmp_path, monkeypatch):
    """The manifest needs the valid rows and the duplicates only; at 100M votes with repeat
    voters the test alone took about 20 minutes. Counts and the stream still run it, once."""
    folder = damaged_log(tmp_path / "votes")
    calls = []
    real = DuckVotes.flagged_voters

    def counted(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DuckVotes, "flagged_voters", counted)
    assert build_manifest(folder / "synthetic" / "compacted", now_us=NOW_US) is not None
    assert calls == []
    duck = DuckVotes(resolve(folder), now_us=NOW_US, trust_manifest=False)
    assert calls == []
    table = duck.counts()
    assert stream(duck, table) and calls == [1]
    assert pc.sum(table["votes"].filter(table["anomalous"])).as_py() > 0  # the test did run


def test_parts_given_twice_or_from_two_copies_are_counted_once(log_dir, tmp_path, monkeypatch):
    """A manifest vouches for its parts once each: the same part given twice (a folder and
    a glob over it, or two names for it) or a second copy of the folder once counted every
    vote twice; now those parts are read the slow way and their repeats dropped, as the
    in-process reader drops them."""
    from arena_core.scale.contract import skipped_of
    from arena_core.scale.python_engine import counts_from_votes, read_for_counts

    def ordered(table):
        return table.sort_by([(name, "ascending") for name in table.column_names])

    compacted = log_dir / "synthetic" / "compacted"
    copy = tmp_path / "copy"
    shutil.copytree(compacted, copy / "compacted")
    monkeypatch.chdir(compacted.parent)
    glob = f"{compacted}/*/*.parquet"
    for sources, files in (([compacted, compacted], [compacted, compacted]),
                         ([compacted, glob], [compacted, *sorted(compacted.glob("*/*.parquet"))]),
                         ([compacted, "compacted"], [compacted, compacted]),
                         ([compacted, copy], [compacted, copy])):  # fmt: skip
        expected = counts_from_votes(read_for_counts(files, now_us=NOW_US))
        got, duck = counts([str(s) for s in sources], trust=True)
        assert ordered(got).equals(ordered(expected)), sources
        assert (
            skipped_of(got) == skipped_of(expected) and skipped_of(got)["duplicate_vote_id"] >= 6000
        )
        assert len(duck.trusted.ranks) <= 3  # one manifest's parts, each once


def test_an_unreadable_part_before_good_ones_is_left_out_of_the_manifest(log_dir):
    """DuckDB's ranks count only the files it could read: a mistyped part sorting first
    shifted them, so the good part was blamed and the build failed with ``error: 0``."""
    compacted = log_dir / "synthetic" / "compacted"
    shutil.copy(log_dir / "hand" / "c.parquet", compacted / "2025-03" / "a-mistyped.parquet")
    path = build_manifest(compacted, now_us=NOW_US)
    names = [p["path"] for p in json.loads(path.read_text())["parts"]]
    assert names == ["2025-03/part-0000.parquet", "2025-04/part-0000.parquet",
                     "2025-05/part-0000.parquet"]  # fmt: skip
    assert_exact(log_dir, trusted=3)
