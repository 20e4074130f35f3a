"""Compaction into monthly Parquet, export to FastChat's format, and the dataset card."""

import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hubfake import LocalHubApi

import arena_core.dataset.compact as compact_module
from arena_core import cli
from arena_core.dataset.card import dataset_card
from arena_core.dataset.compact import CompactionError, compact
from arena_core.dataset.repo import compact_repo
from arena_core.votes.log import VoteLog
from arena_core.votes.parquet import write_parquet
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS

ROOT = Path(__file__).resolve().parent.parent
HOUR = 3600


def shard(folder, month, votes, *, age_hours=2.0, start=0):
    """A shard of ``votes`` ('a', 'b'...) in ``month`` (YYYY-MM), last written ``age_hours`` ago."""
    clock_times = iter(datetime.fromisoformat(f"{month}-01T00:00:00+00:00") + timedelta(seconds=start + k)
                       for k in range(len(votes)))  # fmt: skip
    log = VoteLog(folder, clock=lambda: next(clock_times))
    for v in votes:
        log.append(arena="ar", model_a="x", model_b="y", vote=v, category="en")
    log.close()  # the writing process has ended
    old = time.time() - age_hours * HOUR
    os.utime(log.path, (old, old))
    return log.path


def ids(folder):
    return sorted(read_votes(folder).column("vote_id").to_pylist())


def test_compaction_rolls_old_shards_into_months_and_loses_nothing(tmp_path):
    shard(tmp_path, "2026-10", "ab")
    shard(tmp_path, "2026-11", "abb", start=10)
    young = shard(tmp_path, "2026-11", "a", age_hours=0.1, start=20)
    damaged = shard(tmp_path, "2026-11", "ab", start=30)
    with damaged.open("a") as f:
        f.write("{broken\n")
    os.utime(damaged, (time.time() - 2 * HOUR,) * 2)
    before = read_votes(tmp_path)
    report = compact(tmp_path, min_age_minutes=60)
    assert report.votes == 5 and len(report.rolled) == 2
    assert sorted(p.parent.name for p in report.written) == ["2026-10", "2026-11"]
    manifest = json.loads(report.manifest.read_text())  # readers may skip compaction's checks
    assert report.manifest == tmp_path / "compacted" / "MANIFEST.json"
    assert sorted(p["path"] for p in manifest["parts"]) == sorted(
        p.relative_to(tmp_path / "compacted").as_posix() for p in report.written
    )
    assert sum(p["rows"] for p in manifest["parts"]) == 5
    assert set(report.kept) == {young.name, damaged.name}
    assert young.exists() and damaged.exists()
    after = read_votes(tmp_path)
    assert sorted(after.column("vote_id").to_pylist()) == sorted(
        before.column("vote_id").to_pylist()
    )
    assert after.table.to_pylist() == before.table.to_pylist()  # same rows, same replay order
    assert compact(tmp_path, min_age_minutes=60).votes == 0  # nothing new: a no-op


def test_duplicates_across_sources_are_written_once(tmp_path):
    path = shard(tmp_path, "2026-11", "ab")
    copy = tmp_path / "votes-copy.jsonl"
    copy.write_bytes(path.read_bytes())
    os.utime(copy, (time.time() - 2 * HOUR,) * 2)
    report = compact(tmp_path, min_age_minutes=60)
    assert report.votes == 2 and len(report.rolled) == 2
    assert len(read_votes(tmp_path)) == 2 and not read_votes(tmp_path).skipped


@pytest.mark.parametrize("young", [True, False], ids=["beside-a-young-shard", "both-old"])
def test_a_vote_id_held_twice_at_one_time_with_other_values_keeps_the_board(tmp_path, young):
    """Which of two rows with one vote_id and one ts counts follows the files' order, and the
    monthly files sort before the shards: compacting the old copy beside a young one (which
    sorts first by name) made the old copy count, and changed the board."""
    old = shard(tmp_path, "2026-11", "aaaa")
    twin = tmp_path / "votes-0-twin.jsonl"  # sorts before the old shard
    twin.write_bytes(old.read_bytes().replace(b'"vote":"a"', b'"vote":"b"'))
    age = 0.1 if young else 2.0
    os.utime(twin, (time.time() - age * HOUR,) * 2)
    before = read_votes(tmp_path)
    report = compact(tmp_path, min_age_minutes=60)
    after = read_votes(tmp_path)
    assert after.column("vote").to_pylist() == before.column("vote").to_pylist() == ["b"] * 4
    if young:  # the old shard stays, and says why
        assert old.exists() and "at the same time with other values" in report.kept[old.name]
        assert report.votes == 0 and not list(tmp_path.glob("compacted/*/*.parquet"))
    else:  # both rolled up: the part holds the row that counted
        assert not old.exists() and report.votes == 4


@pytest.mark.parametrize("later", [True, False], ids=["at-a-later-time", "at-the-same-time"])
def test_a_copy_compacted_after_its_original_stays_where_it_is(tmp_path, later):
    """A second row of a vote id (a forged or damaged copy) compacted in a later run than
    the first went into the monthly files beside it, stamped counted: the dataset held the
    vote twice for good, saying a row counts that no board counts. Now the copy's source
    stays, with the reason, and the board and its skip counts are unchanged."""
    old = shard(tmp_path, "2026-11", "aa")
    copy = tmp_path / "votes-twin.jsonl"
    line = old.read_bytes().splitlines()[0]
    if later:
        ts = json.loads(line)["ts"]
        line = line.replace(ts.encode(), ts.replace("2026-11-01", "2026-11-02").encode())
    copy.write_bytes(line.replace(b'"vote":"a"', b'"vote":"b"') + b"\n")
    os.utime(copy, (time.time() - 0.1 * HOUR,) * 2)  # young at the first run
    assert compact(tmp_path, min_age_minutes=60).votes == 2
    os.utime(copy, (time.time() - 2 * HOUR,) * 2)
    before = read_votes(tmp_path)
    report = compact(tmp_path, min_age_minutes=60)
    assert copy.exists() and "a monthly file already holds" in report.kept[copy.name]
    assert report.votes == 0 and not report.written
    parts = [
        r for f in tmp_path.glob("compacted/*/*.parquet") for r in pq.read_table(f).to_pylist()
    ]
    assert sorted(r["vote"] for r in parts) == ["a", "a"]
    after = read_votes(tmp_path)
    assert after.table.to_pylist() == before.table.to_pylist()
    assert after.skipped == before.skipped == {"duplicate_vote_id": 1}


def test_nothing_is_deleted_when_the_written_files_do_not_match(tmp_path, monkeypatch):
    path = shard(tmp_path, "2026-11", "abab")
    real = compact_module._write_months

    def lossy(out, votes, whole):  # a writer that silently drops votes
        written = real(out, votes, whole)
        write_parquet(read_votes(written[0]).table.slice(0, 1), written[0])
        return written

    monkeypatch.setattr(compact_module, "_write_months", lossy)
    with pytest.raises(CompactionError):
        compact(tmp_path, min_age_minutes=60)
    assert path.exists() and len(read_votes(path)) == 4


def test_cli_compacts_a_folder(tmp_path):
    shard(tmp_path, "2026-09", "ab")
    proc = subprocess.run([sys.executable, "-m", "arena_core", "compact", "--votes", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, check=True)  # fmt: skip
    assert "2 votes from 1 files" in proc.stdout
    assert [p.parent.name for p in tmp_path.rglob("*.parquet")] == ["2026-09"]


def test_compacting_the_hub_repo_is_one_commit_and_load_dataset_still_reads_everything(tmp_path):
    datasets = pytest.importorskip("datasets")
    api = LocalHubApi(tmp_path / "hub")
    repo = api.repo_dir("org/votes")
    for k, month in enumerate(["2026-10", "2026-11", "2026-11"]):
        local = tmp_path / f"w{k}"
        shard(local, month, "ab", start=10 * k)
        table = read_votes(local).table
        write_parquet(table, repo / "data" / f"votes-w{k}-000001.parquet")
        age = timedelta(hours=0.1 if k == 2 else 3)  # the last file is still fresh
        api.commit_dates[f"data/votes-w{k}-000001.parquet"] = datetime.now(UTC) - age
    before = ids(repo / "data")
    report = compact_repo(api, "org/votes", tmp_path / "work", min_age_minutes=60)
    assert report.votes == 4 and len(api.commits) == 1
    changes = api.commits[0]["files"]
    assert sum(v is None for v in changes.values()) == 2  # two sources deleted in the same commit
    assert changes.get("data/compacted/MANIFEST.json") is not None  # and the manifest pushed
    assert ids(repo / "data") == before
    assert (repo / "data" / "votes-w2-000001.parquet").exists()
    loaded = datasets.load_dataset(
        str(repo), data_files={"train": "data/**/*.parquet"}, split="train"
    )
    assert sorted(loaded["vote_id"]) == before


def test_fastchat_export_round_trips(tmp_path):
    log = VoteLog(tmp_path / "votes")
    for v, cat in [("a", "en"), ("b", "de"), ("tie", None), ("both_bad", "en")]:
        log.append(
            arena="tts", model_a="m1", model_b="m2", vote=v, category=cat, prompt_id="p", voter="h"
        )
    log.append(arena="tts", model_a="m1", model_b="m2", vote="a", flags=["rate_limited"])
    out = tmp_path / "battles.json"
    subprocess.run([sys.executable, "-m", "arena_core", "export", "--votes", str(tmp_path / "votes"),
                    "--format", "fastchat", "--out", str(out)], cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    battles = json.loads(out.read_text())
    assert [b["winner"] for b in battles] == ["model_a", "model_b", "tie", "tie (bothbad)"]
    assert all(b["anony"] is True for b in battles)
    again = read_votes(out)
    original = read_votes(tmp_path / "votes")
    keep = [not f for f in original.column("flags").to_pylist()]
    for column in ("vote_id", "arena", "model_a", "model_b", "vote", "category", "ts"):
        expected = [v for v, k in zip(original.column(column).to_pylist(), keep, strict=True) if k]
        got = again.column(column).to_pylist()
        if column == "ts":
            got = [read_votes_ts(t) for t in got]
            expected = [read_votes_ts(t) for t in expected]
        assert got == expected, column


def test_export_include_flagged_round_trips_judges_flags_and_any_year(tmp_path):
    """The CLI's export read back gives the same table: a judge's verdict stays a judge's,
    a flagged vote stays flagged, a time of year 999 or 1500 keeps its microseconds."""
    base = {"schema_version": 4, "arena": "tts", "model_a": "m1", "model_b": "m2",
            "voter": "h", "voter_kind": "human", "flags": []}  # fmt: skip
    rows = [base | {"vote_id": "1", "ts": "0999-06-01T00:00:00.000000Z", "vote": "a"},
            base | {"vote_id": "2", "ts": "1500-06-01T00:00:00.000001Z", "vote": "b",
                    "flags": ["rate_limited"]},
            base | {"vote_id": "3", "ts": "2026-01-01T00:00:00.5+02:00", "vote": "tie",
                    "voter_kind": "judge", "judge": "jdg", "voter": "judge:jdg"}]  # fmt: skip
    (tmp_path / "votes").mkdir()
    (tmp_path / "votes" / "votes-x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "battles.json"
    subprocess.run([sys.executable, "-m", "arena_core", "export", "--votes", str(tmp_path / "votes"),
                    "--include-flagged", "--out", str(out)], cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    original, again = read_votes(tmp_path / "votes"), read_votes(out)
    assert len(original) == 3 and not original.skipped
    assert again.table.to_pylist() == original.table.to_pylist()
    assert again.column("voter_kind").to_pylist() == ["human", "human", "judge"]
    assert again.column("flags").to_pylist() == [[], ["rate_limited"], []]


def contrarian_log(path: Path) -> Path:
    """Twenty humans who mostly prefer the lower model id, and a contrarian who always
    prefers the other one, every other vote of theirs rate limited: the anomalous-voter
    test flags the contrarian, whose unflagged votes the boards leave out too."""
    rng, models, rows = random.Random(1), ["m1", "m2", "m3", "m4"], []

    def add(voter, vote, pair, flags=()):
        k = len(rows) + 1
        rows.append({"schema_version": 4, "vote_id": f"v{k:05d}", "arena": "ar",
                     "ts": f"2026-10-01T00:00:00.{k:06d}Z", "model_a": pair[0],
                     "model_b": pair[1], "vote": vote, "voter": voter, "voter_kind": "human",
                     "flags": list(flags)})  # fmt: skip

    for k in range(200):
        pair = sorted(rng.sample(models, 2))
        add(f"h{k % 20}", "a" if rng.random() < 0.9 else "b", pair)
        if k % 10 == 0:
            add("contrarian", "b", pair, ["rate_limited"] if k % 20 == 0 else [])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("arena", [None, "ar"])
def test_export_leaves_out_what_the_board_leaves_out(tmp_path, capsys, arena):
    """Without --include-flagged the export left out flagged votes only: the anomalous
    voter's other votes went out as counted battles, which the board of the same log leaves
    out. Now the export holds the votes the board counts, each stamped counted."""
    log = contrarian_log(tmp_path / "votes.jsonl")
    out = tmp_path / "battles.json"
    only = ["--arena", arena] if arena else []
    assert cli.main(["leaderboard", "--votes", str(log), "--arena", "ar", "--format", "json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["skipped"] == {"flagged": 10, "anomalous_voter": 10}
    assert cli.main(["export", "--votes", str(log), "--out", str(out), *only]) == 0
    battles = json.loads(out.read_text())
    assert len(battles) == board["votes_used"] == 200
    assert not [b for b in battles if b["voter"] == "contrarian"]
    assert {(b["counted"], b["count_reason"]) for b in battles} == {(True, None)}


def read_votes_ts(text):
    return datetime.fromisoformat(text).astimezone(UTC)


def test_dataset_card_declares_every_field():
    card = dataset_card("org/votes", space_id="org/arena", arenas=("tts-en",))
    front = yaml.safe_load(card.split("---")[1])
    info = {c["config_name"]: c["features"] for c in front["dataset_info"]}
    assert [f["name"] for f in info["default"]] == [f.name for f in FIELDS]
    assert front["configs"][0]["data_files"][0]["path"] == "data/**/*.parquet"
    # The second config: the battles' audio, its column declared as datasets' Audio.
    assert front["configs"][1] == {"config_name": "audio",
                                   "data_files": [{"split": "train", "path": "audio/**/*.parquet"}]}  # fmt: skip
    assert [f["name"] for f in info["audio"]][:3] == ["arena", "model", "model_version"]
    assert {"name": "audio", "dtype": "audio"} in info["audio"]
    assert {"name": "counted", "dtype": "bool"} in info["default"]
    for f in FIELDS:  # every field documented, in the card's table
        assert f"| `{f.name}` |" in card and f.doc in card
    assert "--arena tts-en" in card and "HMAC" in card and front["license"] == "cc-by-4.0"


def test_a_shard_held_by_a_running_process_is_never_compacted(tmp_path):
    live = VoteLog(tmp_path)
    for v in "ab":
        live.append(arena="ar", model_a="x", model_b="y", vote=v)
    old = time.time() - 2 * HOUR
    os.utime(live.path, (old, old))  # idle for two hours, but still running
    report = compact(tmp_path, min_age_minutes=60)
    assert report.votes == 0 and report.kept == {live.path.name: "in use by a running process"}
    live.close()
    assert compact(tmp_path, min_age_minutes=60).votes == 2


def test_a_repo_compaction_never_deletes_a_file_pushed_after_it_read_the_repo(tmp_path):
    """The Space's push landed but its answer was lost, an hour of retries failed (the
    file's last commit aged), then the retry succeeded, with two more votes, while
    ``compact --repo`` was between its download and its commit: the commit deleted the
    newer file and the two acknowledged votes left the dataset. The commit now names the
    revision it read as its parent, and the Hub (a local stand-in: the real one cannot be
    reached from here) refuses it."""
    from datetime import UTC, datetime, timedelta

    from hubfake import REPO, Landed, LocalHubApi, repo_votes, settled, timed_out, writer
    from huggingface_hub.errors import HfHubHTTPError

    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync).uploader.stop()  # its first push done, the scheduler pushes no more: the
    # pushes below are the only ones (a flush elsewhere in the process triggers it otherwise)
    acked = [
        log.append(arena="speech", model_a="x", model_b="y", vote="a").vote_id for _ in range(3)
    ]
    api.failures = [Landed(timed_out())]
    with pytest.raises(Exception):  # noqa: B017, PT011 - the lost answer, as the client sees it
        sync.uploader.push_to_hub()
    name = next(p for p in api.commit_dates if p.startswith("data/votes-"))
    api.commit_dates[name] = datetime.now(UTC) - timedelta(minutes=65)  # old enough to roll
    acked += [
        log.append(arena="speech", model_a="x", model_b="y", vote="b").vote_id for _ in range(2)
    ]
    download = api.snapshot_download

    def download_then_the_space_pushes(**kwargs):
        folder = download(**kwargs)
        sync.uploader.push_to_hub()  # same file name, five votes now
        return folder

    api.snapshot_download = download_then_the_space_pushes
    with pytest.raises(HfHubHTTPError, match="412"):
        compact_repo(api, REPO, tmp_path / "work", min_age_minutes=60)
    del api.snapshot_download
    assert sorted(repo_votes(api).column("vote_id").to_pylist()) == sorted(acked)
    api.commit_dates[name] = datetime.now(UTC) - timedelta(minutes=65)  # an hour later
    report = compact_repo(api, REPO, tmp_path / "again", min_age_minutes=60)
    assert report.votes == 5 and sorted(repo_votes(api).column("vote_id").to_pylist()) == sorted(
        acked
    )


def raw_ids(folder):
    """The vote_ids of every Parquet file of ``folder``, repeats kept, as a reader that does
    not drop repeated ids (``datasets.load_dataset``) sees them."""
    files = sorted(Path(folder).rglob("*.parquet"))
    return sorted(v for f in files for v in pq.read_table(f)["vote_id"].to_pylist())


@pytest.mark.parametrize("newer", [1, 0], ids=["with-a-newer-vote", "nothing-newer"])
def test_votes_a_monthly_file_already_holds_are_not_written_again(tmp_path, newer):
    """The Space retries a push whose answer was lost under the same name, with the same and
    newer lines; when the first copy had landed and was compacted in between, the retry
    brought its votes back and the next compaction wrote them into a second monthly file:
    held twice in the dataset, for good. Now they are counted as already compacted, the
    rest is written, and the source is removed."""
    space = shard(tmp_path / "space", "2026-11", "ab" + "b" * newer)  # the Space's shard
    lines = space.read_bytes().splitlines(keepends=True)
    shutil.rmtree(space.parent)
    retry = tmp_path / "votes-s-000001.jsonl"
    retry.write_bytes(b"".join(lines[:2]))  # the copy that landed ...
    os.utime(retry, (time.time() - 2 * HOUR,) * 2)
    assert compact(tmp_path, min_age_minutes=60).votes == 2  # ... and was compacted
    retry.write_bytes(b"".join(lines))  # the retry: the same name, the same lines, and more
    os.utime(retry, (time.time() - 2 * HOUR,) * 2)
    before = read_votes(tmp_path).table.to_pylist()
    report = compact(tmp_path, min_age_minutes=60)
    assert (report.votes, report.already_compacted, report.rolled) == (newer, 2, [retry])
    assert len(report.written) == newer and not retry.exists()
    assert "2 more were already in monthly files, not written again" in report.summary()
    assert raw_ids(tmp_path) == sorted(json.loads(line)["vote_id"] for line in lines)
    after = read_votes(tmp_path)
    assert not after.skipped and after.table.to_pylist() == before


def test_a_monthly_file_is_never_replaced_by_a_source_with_its_ids_and_other_rows(tmp_path):
    """A part is named by its vote ids. A source holding exactly a part's ids, at the same
    times, with other values (a forged or damaged copy) got the part's name: the compaction
    wrote over the part, its rows were lost and the board changed, although the conflict
    rule kept the source in place. The part now stays as it was."""
    old = shard(tmp_path, "2026-11", "aaaa")
    data = old.read_bytes()
    (part,) = compact(tmp_path, min_age_minutes=60).written
    rows = part.read_bytes()
    twin = tmp_path / "votes-twin.jsonl"
    twin.write_bytes(data.replace(b'"vote":"a"', b'"vote":"b"'))
    os.utime(twin, (time.time() - 2 * HOUR,) * 2)
    report = compact(tmp_path, min_age_minutes=60)
    assert "at the same time with other values" in report.kept[twin.name]
    assert report.already_compacted == 0 and twin.exists()
    assert part.read_bytes() == rows and list(tmp_path.glob("compacted/*/*.parquet")) == [part]
    assert read_votes(tmp_path).column("vote").to_pylist() == ["a"] * 4
