"""A researcher's path through the command line and the readers, tried with odd input.

Each test is a case found by a hunt (session of 2026-12-01): what the researcher saw before
is in its docstring. The subprocess tests run the CLI as a user would, with the current
folder set where it matters (an empty path is the current folder).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena_core.votes import reasons
from arena_core.votes.read import read_votes
from arena_core.votes.schema import ARROW_SCHEMA, Vote

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"  # copies of /work/shared/data


def cli(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "arena_core", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=120, env=env)  # fmt: skip


def one_line_error(proc, *words):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _rows(n: int = 60) -> list[dict]:
    models = ("m1", "m2", "m3")
    return [Vote(vote_id=f"v{k:04d}", ts=f"2025-06-01T10:{k // 60:02d}:{k % 60:02d}.000Z",
                 arena="tts-en", model_a=models[k % 3], model_b=models[(k + 1) % 3],
                 vote="ab"[k % 2], category="en", voter=f"u{k % 7}").to_dict()
            for k in range(n)]  # fmt: skip


def _shard(path: Path, rows=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows or _rows()))
    return path


def _parquet(path: Path, rows=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows or _rows(), schema=ARROW_SCHEMA), path)
    return path


# --- bad options -----------------------------------------------------------------------


def test_a_bootstrap_beyond_memory_is_one_line(tmp_path):
    """``leaderboard --prior-weight 0 --bootstrap 100000000000`` printed numpy's
    ``_ArrayMemoryError`` traceback ("Unable to allocate 21.8 TiB") and exit status 1."""
    shard = _shard(tmp_path / "votes.jsonl")
    proc = cli("leaderboard", "--votes", shard, "--arena", "tts-en", "--prior-weight", "0",
               "--bootstrap", "100000000000")  # fmt: skip
    one_line_error(proc, "out of memory", "--bootstrap")


def test_an_empty_votes_path_reads_nothing(tmp_path):
    """``--votes ""`` (a script's unset ``--votes "$VOTES"``) read the current folder, every
    vote file below it, and printed a board of them with exit status 0."""
    _shard(tmp_path / "somewhere" / "else.jsonl")
    for command in (("leaderboard", "--votes", "", "--arena", "tts-en"),
                    ("export", "--votes", "", "--out", tmp_path / "out.json"),
                    ("counts", "--engine", "python", "--votes", "", "--out",
                     tmp_path / "c.parquet")):  # fmt: skip
        one_line_error(cli(*command, cwd=tmp_path), "empty path")
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "c.parquet").exists()


def test_compact_of_an_empty_path_deletes_nothing(tmp_path):
    """``compact --votes ""`` compacted the current folder: its shards were rolled into
    ``./compacted/`` and deleted, exit status 0 (``manifest --votes ""`` likewise wrote one)."""
    shard = _shard(tmp_path / "votes-1.jsonl")
    old = time.time() - 3 * 3600
    os.utime(shard, (old, old))
    one_line_error(cli("compact", "--votes", "", cwd=tmp_path), "empty path")
    one_line_error(cli("manifest", "--votes", "", cwd=tmp_path), "empty path")
    assert shard.exists() and not (tmp_path / "compacted").exists()


# --- files a researcher names ----------------------------------------------------------


@pytest.mark.parametrize("name", ["votes.pq", "VOTES.PARQUET", "votes.parq"])
def test_a_parquet_file_under_another_name_is_read_as_parquet(tmp_path, name):
    """A Parquet file not named ``*.parquet`` was read as JSONL: "no valid vote in votes.pq
    (skipped: 648 invalid_json, 1 truncated_line)", a damage report of a sound file."""
    path = _parquet(tmp_path / name)
    votes = read_votes(path)
    assert len(votes) == 60 and not votes.skipped


def test_a_compressed_log_is_refused_as_compressed_not_as_bad_lines(tmp_path):
    """``votes.jsonl.gz`` was read as JSONL: each run of bytes between newlines counted as
    an ``invalid_json`` row (hundreds of "damaged votes"); it is one unreadable file."""
    raw = _shard(tmp_path / "votes.jsonl").read_bytes()
    path = tmp_path / "votes.jsonl.gz"
    path.write_bytes(gzip.compress(raw))
    votes = read_votes(path)
    assert votes.skipped == Counter({reasons.UNREADABLE: 1})


def test_a_folder_of_fastchat_exports_says_why_it_holds_no_vote(tmp_path):
    """A folder holding FastChat exports (``*.json``) or ``*.JSONL`` files answered "no vote
    in DIR; pass --registry to print its arenas' empty boards": a folder is read for
    ``*.jsonl`` and ``*.parquet`` only, which the message did not say."""
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "battles.json").write_text(json.dumps([{"model_a": "x", "model_b": "y",
                                                      "winner": "tie", "tstamp": 1.7e9,
                                                      "anony": True}]))  # fmt: skip
    one_line_error(cli("leaderboard", "--votes", folder), "battles.json", "*.jsonl")


def test_a_dangling_link_among_the_vote_files_is_counted(tmp_path):
    """A vote file that is a dangling symbolic link (a git-annex or datalad checkout whose
    content was not fetched, a Hub cache whose blob was removed) was left out silently:
    the board had fewer votes and ``skipped`` was empty. It is an unreadable file."""
    folder = tmp_path / "votes"
    _shard(folder / "a.jsonl")
    (folder / "b.jsonl").symlink_to(tmp_path / "not-fetched.jsonl")
    (folder / "c.parquet").symlink_to(tmp_path / "not-fetched.parquet")
    votes = read_votes(folder)
    assert len(votes) == 60
    assert votes.skipped == Counter({reasons.UNREADABLE: 2})


# --- the FastChat importer -------------------------------------------------------------


def test_a_fastchat_tstamp_no_time_names_is_bad_ts_not_missing(tmp_path):
    """A battle whose ``tstamp`` is there but names no time of the years 1 to 9999 (NaN,
    1e20, -1e12: a damaged export) was counted ``missing_field``; a JSONL row whose ``ts``
    is out of range is ``bad_ts``. A battle without ``tstamp`` stays ``missing_field``."""
    battles = json.loads((DATA / "fastchat_clean_battle_sts.json").read_text())
    for k, bad in enumerate([float("nan"), 1e20, -1e12, float("inf"), 253402300800.0]):
        battles[k]["tstamp"] = bad
    battles[5]["tstamp"] = None
    del battles[6]["tstamp"]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(battles))  # NaN and Infinity as Python writes them
    votes = read_votes(path)
    assert votes.skipped == Counter({reasons.BAD_TS: 5, reasons.MISSING: 2})
    assert len(votes) == len(battles) - 7


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_a_cut_fastchat_export_keeps_its_whole_battles(tmp_path, keep):
    """A FastChat export cut short (a download that stopped) was one ``unreadable_file``:
    "no valid vote in sts.json", every battle lost, where a JSONL file cut mid-line keeps
    its whole lines and counts one ``truncated_line``. Its whole battles are read now."""
    text = (DATA / "fastchat_clean_battle_sts.json").read_text()
    whole = json.loads(text)
    cut = text[: int(len(text) * keep)]
    path = tmp_path / "sts.json"
    path.write_text(cut)
    votes = read_votes(path)
    assert votes.skipped == Counter({reasons.TRUNCATED: 1})
    kept = cut.count("}")  # battles closed before the cut (they hold no nested object)
    assert len(votes) == kept and 0 < kept < len(whole)
    # the same battles as the whole export's first ones, with the same ids
    first = read_votes(_write_json(tmp_path / "first.json", whole[:kept]))
    assert sorted(votes.column("vote_id").to_pylist()) == sorted(
        first.column("vote_id").to_pylist()
    )


def test_a_damaged_fastchat_export_that_ends_is_still_refused(tmp_path):
    """Damage inside a list that ends with ``]`` is not a cut: the file stays unreadable."""
    text = (DATA / "fastchat_clean_battle_sts.json").read_text()
    path = tmp_path / "sts.json"
    path.write_text(text.replace('"winner"', '"winner" "', 1))
    votes = read_votes(path)
    assert len(votes) == 0 and votes.skipped == Counter({reasons.UNREADABLE: 1})


def _write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value))
    return path


def test_an_arenas_board_is_the_same_with_a_fastchat_export_beside_it(tmp_path):
    """``leaderboard --votes log.jsonl sts.json --arena tts-en`` read the FastChat battles
    into tts-en: its board gained 137 votes and 14 embedding models, where the same files
    without ``--arena`` print tts-en's board with the log's votes alone (the export under
    ``fastchat``); and ``--arena typo`` printed a board of the export instead of "no votes
    of arena 'typo'". A FastChat export alone is still read into ``--arena``."""
    log = _shard(tmp_path / "log.jsonl")
    sts = DATA / "fastchat_clean_battle_sts.json"
    clock = ("--read-at", "2026-12-01", "--format", "json")
    alone = cli("leaderboard", "--votes", log, "--arena", "tts-en", *clock)
    mixed = cli("leaderboard", "--votes", log, sts, "--arena", "tts-en", *clock)
    assert alone.returncode == mixed.returncode == 0, mixed.stderr
    one, two = json.loads(alone.stdout), json.loads(mixed.stdout)
    assert two["votes_used"] == one["votes_used"] == 60
    assert [r["model"] for r in two["rows"]] == [r["model"] for r in one["rows"]]
    one_line_error(cli("leaderboard", "--votes", log, sts, "--arena", "typo", *clock), "typo")
    export_alone = cli("leaderboard", "--votes", sts, "--arena", "mteb-sts", *clock)
    assert json.loads(export_alone.stdout)["votes_used"] == 137


# --- remote paths and engines ----------------------------------------------------------


@pytest.mark.parametrize("engine", ["auto", "duckdb", "python"])
def test_a_hub_path_that_is_not_a_dataset_says_so(engine):
    """``leaderboard --votes hf://models/x/y`` said "no vote file or folder at hf:/models/x/y"
    (the engine auto or python: the path mangled, nothing about the form a Hub dataset
    takes) or "--engine duckdb reads Parquet only; use --engine python", which could not
    read it either; ``counts`` said the right thing: a vote dataset is hf://datasets/..."""
    proc = cli("leaderboard", "--votes", "hf://models/x/y", "--arena", "tts-en",
               "--engine", engine)  # fmt: skip
    if engine == "python":  # the in-process reader reads local files only
        one_line_error(proc, "hf://models/x/y", "--repo")
    else:
        one_line_error(proc, "hf://models/x/y", "hf://datasets/")


def test_a_bad_spark_master_is_one_error_not_a_traceback(tmp_path):
    """``counts --engine spark --spark-master bogus://`` ended in pyspark's
    ``PySparkRuntimeError`` traceback, exit status 1 (the JVM's own lines come first: they
    are Java's, not ours)."""
    pytest.importorskip("pyspark")
    path = _parquet(tmp_path / "votes.parquet")
    proc = cli("counts", "--engine", "spark", "--votes", path, "--out", tmp_path / "c.parquet",
               "--spark-master", "bogus://")  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("error: could not start Spark")


def test_compaction_keeps_a_dangling_link_and_compacts_the_rest(tmp_path):
    """With dangling links listed (and counted by the readers), compaction leaves them where
    they are, names them, and compacts the other files; the board is the same after."""
    from arena_core.dataset.compact import compact

    folder = tmp_path / "votes"
    shard = _shard(folder / "votes-1.jsonl")
    old = time.time() - 3 * 3600
    os.utime(shard, (old, old))
    (folder / "votes-2.jsonl").symlink_to(tmp_path / "not-fetched.jsonl")
    before = read_votes(folder)
    report = compact(folder, min_age_minutes=0)
    assert "votes-2.jsonl" in report.kept and not shard.exists()
    after = read_votes(folder)
    assert after.skipped == before.skipped == Counter({reasons.UNREADABLE: 1})
    assert after.column("vote_id").to_pylist() == before.column("vote_id").to_pylist()
