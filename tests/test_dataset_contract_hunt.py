"""The vote dataset as a public contract, seen by a researcher who downloads it.

Hunted: whether compaction keeps every vote once and as written (rows of schema versions
1 to 4, unicode, timestamps with offsets and microseconds, null against empty string and
empty list), whether it is safe beside a live Space and beside another compaction, and
whether the card's default config (``datasets.load_dataset`` on the repo's layout, read
offline from a local folder), pandas and the command line's replay see the same votes.
Nothing here talks to the Hub: the repo is a local folder laid out as the dataset repo
(the real Hub cannot be reached from the test machine).
"""

import json
import os
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arena_core.dataset.compact as compact_module
from arena_core.dataset.card import dataset_card
from arena_core.dataset.compact import CompactionError, compact
from arena_core.votes.hold import hold_file
from arena_core.votes.parquet import write_parquet
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS

HOUR = 3600
#: A reader's clock far ahead of every row here: no row is judged ``future_ts``.
LATER_US = 2**62
#: The fields a monthly file restamps with the replay's verdict.
VERDICT = ("counted", "count_reason")


def row(k: int, **fields) -> dict:
    """A valid version-4 vote ``k`` of October 2026, with ``fields`` replaced or added."""
    base = {"schema_version": 4, "vote_id": f"v{k:04d}", "ts": f"2026-10-01T00:00:{k % 60:02d}Z",
            "arena": "ar", "model_a": "x", "model_b": "y", "vote": "a", "flags": []}  # fmt: skip
    return base | fields


def old_file(path: Path, rows: list[dict]) -> Path:
    """``rows`` as a JSONL shard last written two hours ago (no process holds it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    os.utime(path, (time.time() - 2 * HOUR,) * 2)
    return path


def parquet_ids(folder: Path) -> list[str]:
    """Every ``vote_id`` of every Parquet file under ``folder``, repeats kept: what a reader
    that keeps every row (``datasets``, pandas) counts."""
    return sorted(
        v for f in folder.rglob("*.parquet") for v in pq.read_table(f)["vote_id"].to_pylist()
    )


def test_a_file_a_live_uploader_holds_is_not_compacted(tmp_path):
    """A live uploader locks the local copy of the earlier votes it adopted
    (``adopted-<digest>.parquet``) until their push lands, so that a process started
    meanwhile on the same disk leaves them to it (``votes/hold.py``: "a compaction or a
    neighbour's start-up leaves them alone"). Compaction checked the lock of ``.jsonl``
    shards only: with the Hub down for over an hour it rolled the held copy into an
    unlocked monthly file and deleted it, and a process started then adopted those votes
    again, under a name of its own."""
    folder = tmp_path / "votes"
    source = old_file(tmp_path / "src" / "votes-old.jsonl", [row(1), row(2)])
    adopted = folder / "adopted-0123456789abcdef.parquet"
    write_parquet(read_votes(source).table, adopted)
    os.utime(adopted, (time.time() - 2 * HOUR,) * 2)
    held = hold_file(adopted)
    try:
        report = compact(folder, min_age_minutes=60)
        assert report.kept == {adopted.name: "in use by a running process"}
        assert adopted.exists() and not list(folder.glob("compacted/*/*.parquet"))
    finally:
        os.close(held)
    assert compact(folder, min_age_minutes=60).votes == 2  # let go: rolled up as any file


def test_two_compactions_at_once_write_each_vote_once(tmp_path, monkeypatch):
    """Two ``compact --votes`` runs on one folder (a cron job and an operator, or a cron job
    slower than its period): the second read the folder before the first had written, and
    wrote the same votes into a second monthly file beside the first one's (a part is never
    replaced); the first then stopped on the sources the second had deleted. Every vote was
    in the monthly files twice, for good: ``load_dataset`` counted it twice, and every
    replay counted a skipped ``duplicate_vote_id`` per vote. Now one compaction of a folder
    runs at a time: the second is refused, nothing done, and the first finishes."""
    old_file(tmp_path / "votes-a.jsonl", [row(k) for k in range(1, 5)])
    real = compact_module._write_months
    other = []

    def the_other_run_first(out, votes, whole):  # the second run overtakes the first here
        if not other:
            other.append(None)  # the other run's own write goes straight through
            try:
                other[0] = compact(tmp_path, min_age_minutes=60)
            except CompactionError as exc:
                other[0] = exc
        return real(out, votes, whole)

    monkeypatch.setattr(compact_module, "_write_months", the_other_run_first)
    report = compact(tmp_path, min_age_minutes=60)
    assert isinstance(other[0], CompactionError) and "another compaction" in str(other[0])
    assert report.votes == 4 and not list(tmp_path.glob("votes-*.jsonl"))
    assert parquet_ids(tmp_path) == [f"v{k:04d}" for k in range(1, 5)]
    after = read_votes(tmp_path)
    assert len(after) == 4 and not after.skipped


def test_the_card_names_every_kind_of_file_the_repo_holds(tmp_path):
    """The card's file list left out three kinds the code publishes: the adopted votes of an
    earlier run (``data/adopted-<digest>.parquet``, which the default config reads), the
    compaction's manifest (``data/compacted/MANIFEST.json``, which is not votes) and the
    daily snapshots. It also said a vote is in two files only "for a moment while files are
    compacted", though a Hub compaction is one commit: a retried push keeps its copy until
    the next compaction, and a conflicting copy stays for good, while ``load_dataset``
    keeps every row."""
    from datetime import date

    from arena_core.dataset.uploader import adopted_file
    from arena_core.scale.manifest import MANIFEST_NAME
    from arena_core.snapshots.daily import SNAPSHOT_DIR, snapshot_path

    card = dataset_card("org/votes", space_id="org/arena", arenas=("tts-en",))
    files = " ".join(card.split("## Files")[1].split("## Schema")[0].split())
    source = old_file(tmp_path / "votes-a.jsonl", [row(1)])
    name, _ = adopted_file(read_votes(source).table)
    assert name.startswith("adopted-") and "`data/adopted-<digest>.parquet`" in files
    assert f"`data/compacted/{MANIFEST_NAME}`" in files
    assert snapshot_path("tts-en", date(2026, 1, 2)).startswith(f"{SNAPSHOT_DIR}/tts-en/")
    assert f"`{SNAPSHOT_DIR}/<arena>/<YYYY-MM-DD>.json`" in files
    assert "for a moment while files are compacted" not in files
    assert "`load_dataset` keeps every row" in files


#: Text a researcher must get back as written: empty, unicode off the basic plane, a NUL.
TEXT = st.one_of(st.none(), st.just(""), st.text(st.characters(codec="utf-8"), max_size=8))
#: Timestamps the reader accepts: any explicit zone, 0 to 6 fraction digits, 2020 to 2023.
TS = st.builds(
    lambda day, sec, frac, zone: f"202{day % 4}-0{1 + day % 9}-1{day % 10}T1{sec % 10}:0{sec % 6}:"
    f"{sec % 60:02d}{frac}{zone}",
    st.integers(0, 99), st.integers(0, 59),
    st.sampled_from(["", ".1", ".123", ".000001", ".999999"]),
    st.sampled_from(["Z", "+00:00", "-00:00", "+05:30", "-11:59", "+23:00"]),
)  # fmt: skip
NUMBER = st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False), st.just(-0.0))


@st.composite
def vote_rows(draw) -> dict:
    """A row of schema 1, 2, 3 or 4 as another writer may have left it: optional fields
    absent, null or empty, ``flags`` absent, null, empty or not."""
    version = draw(st.integers(1, 4))
    out = {"schema_version": version, "vote_id": draw(st.uuids()).hex, "ts": draw(TS),
           "arena": "ar", "model_a": "x", "model_b": "y",
           "vote": draw(st.sampled_from(["a", "b", "tie", "both_bad"]))}  # fmt: skip
    optional = {"battle_id": TEXT, "prompt": TEXT, "category": TEXT, "voter": TEXT,
                "flags": st.sampled_from([None, [], ["rate_limited"]])}  # fmt: skip
    if version >= 2:
        optional |= {"model_a_version": TEXT, "model_b_version": TEXT}
    if version >= 3:
        optional |= {
            "model_a_lufs": NUMBER,
            "model_b_sample_rate": st.none() | st.integers(1, 2**62),
        }
    if version == 4:
        optional |= {"listen_a_s": NUMBER, "prompt_origin": st.sampled_from([None, "typed"])}
    for name, values in optional.items():
        if draw(st.booleans()):  # present, perhaps null; else absent
            out[name] = draw(values)
    return out


@settings(max_examples=15)
@given(rows=st.lists(vote_rows(), min_size=1, max_size=8), cut=st.integers(0, 8))
def test_compaction_keeps_every_field_as_written(tmp_path_factory, rows, cut):
    """Rows of every schema version in two shards, compacted: each monthly file's row holds
    every field as the line held it (the text of ``ts`` with its zone and digits, null
    against empty string, null against empty ``flags``, -0.0, unicode), but ``counted`` and
    ``count_reason``, which carry the replay's verdict; the board's rows and their order are
    the same, and a reader that keeps every row (pandas) counts each vote once."""
    folder = tmp_path_factory.mktemp("votes")
    old_file(folder / "votes-a.jsonl", rows[:cut])
    old_file(folder / "votes-b.jsonl", rows[cut:])
    before = read_votes(folder)
    assert len(before) == len(rows) and not before.skipped
    report = compact(folder, min_age_minutes=60)
    assert report.votes == len(rows) and not report.kept
    written = {r["vote_id"]: r for f in report.written for r in pq.read_table(f).to_pylist()}
    for line in rows:
        got = written[line["vote_id"]]
        for f in FIELDS:
            if f.name not in VERDICT:
                assert repr(got[f.name]) == repr(line.get(f.name)), f.name
    after = read_votes(folder)
    drop = list(VERDICT)
    assert repr(after.table.drop_columns(drop).to_pylist()) == repr(
        before.table.drop_columns(drop).to_pylist()
    )
    assert sorted(pd.concat(pd.read_parquet(f) for f in report.written)["vote_id"]) == sorted(
        written
    )


def test_the_cards_default_config_reads_the_votes_the_replay_counts(tmp_path):
    """A repo as a researcher downloads it, in a local folder (the Hub cannot be reached
    here): the card, a push of version-3 days (25 columns, as that release wrote them), a
    push with its damaged lines, an adopted file, a compacted month with its manifest, the
    registry and a daily snapshot. ``load_dataset`` with the card's default config, pandas
    over the Parquet files and the command line's reader see the same votes, once each."""
    datasets = pytest.importorskip("datasets")
    repo, data = tmp_path / "repo", tmp_path / "repo" / "data"
    (repo / "README.md").parent.mkdir(parents=True)
    (repo / "README.md").write_text(dataset_card("org/votes", space_id="org/arena"))
    old_file(data / "votes-m.jsonl", [row(k, ts=f"2026-09-0{k}T00:00:00.5+02:00") for k in (1, 2)])
    compact(data, min_age_minutes=60)  # a compacted month and its manifest
    v3 = read_votes(old_file(tmp_path / "v3.jsonl", [row(3, schema_version=3)])).table
    pq.write_table(
        v3.select([f.name for f in FIELDS[:25]]).cast(
            pa.schema([(f.name, f.type) for f in FIELDS[:25]])
        ),
        data / "votes-p-000001.parquet",
    )
    write_parquet(read_votes(old_file(tmp_path / "v4.jsonl", [row(4), row(5, prompt="é")])).table,
                  data / "votes-q-000001.parquet")  # fmt: skip
    (data / "votes-q-000001.damaged.jsonl").write_text('{"vote_id": "half\n')
    write_parquet(read_votes(old_file(tmp_path / "e.jsonl", [row(6)])).table,
                  data / "adopted-0123456789abcdef.parquet")  # fmt: skip
    (repo / "registry").mkdir()
    (repo / "registry" / "registry.yaml").write_text("arenas: []\n")
    (repo / "leaderboards" / "ar").mkdir(parents=True)
    (repo / "leaderboards" / "ar" / "2026-10-01.json").write_text("{}")
    assert (data / "compacted" / "MANIFEST.json").exists()
    replay = read_votes(data)
    assert replay.skipped == {"invalid_json": 1}
    expected = sorted(replay.column("vote_id").to_pylist())
    assert expected == [f"v{k:04d}" for k in range(1, 7)]
    loaded = datasets.load_dataset(str(repo), split="train", cache_dir=str(tmp_path / "cache"))
    assert sorted(loaded["vote_id"]) == expected
    assert loaded.features["flags"].feature.dtype == "string"
    frame = pd.concat(pd.read_parquet(f) for f in sorted(data.rglob("*.parquet")))
    assert sorted(frame["vote_id"]) == expected


def test_a_folder_on_a_file_system_without_locks_still_compacts(tmp_path, monkeypatch, caplog):
    """Some network mounts refuse ``flock`` (ENOLCK). With the folder's lock and a lock
    probe of every Parquet file, a folder of Parquet files that compacted before stopped
    with "No locks available" (found by review). Now the run goes on, saying nothing
    guards it against a second run; only shards and adopted copies are probed."""
    import errno
    import fcntl

    folder = tmp_path / "votes"
    source = old_file(tmp_path / "src" / "votes-old.jsonl", [row(1), row(2)])
    pushed = folder / "votes-abc-000001.parquet"
    write_parquet(read_votes(source).table, pushed)
    os.utime(pushed, (time.time() - 2 * HOUR,) * 2)

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    report = compact(folder, min_age_minutes=60)
    assert report.votes == 2 and not pushed.exists()
    assert "nothing guards it against a second compaction" in caplog.text
