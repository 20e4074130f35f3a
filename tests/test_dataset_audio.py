"""The dataset's audio config, and the replay's verdict in compacted files.

The real Hub is unreachable here, so publishing runs against ``hubfake.LocalHubApi``
(a folder standing in for the repo, with the HfApi calls the code makes); ``datasets``
reads the result offline, from that folder, through the card's two configs.
"""

import io
import os
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile
from hubfake import LocalHubApi
from test_service_integrity import campaign, campaign_service
from test_space_style import build

from arena_core.dataset.audio import (
    AUDIO_DIR,
    AudioPublisher,
    OutputKey,
    battle_outputs,
    cache_lookup,
    publish_audio,
    write_audio,
)
from arena_core.dataset.card import dataset_card
from arena_core.dataset.compact import compact
from arena_core.dataset.verdict import replay_verdict
from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.votes.parquet import write_parquet
from arena_core.votes.read import read_votes

REPO = "org/votes"
#: Vote columns the audio config is built from.
COLUMNS = ["arena", "model_a", "model_b", "model_a_version", "model_b_version", "prompt_id",
           "prompt", "category"]  # fmt: skip


def speech_votes(tmp_path, typed=False):
    """A speech arena with a raw output cache, and votes on its set prompts (and a typed one)."""
    service, pool = build(tmp_path)
    for _ in range(6):
        view = service.new_battle("tts")
        service.vote(view.handle, "a", voter="v")
    if typed:
        view = service.new_battle("tts", "Some words of a visitor's own.")
        service.vote(view.handle, "b", voter="v")
    service.close()
    return service, pool, read_votes(tmp_path / "votes", columns=COLUMNS)


def test_the_outputs_of_set_prompt_battles_both_sides_once_each(tmp_path):
    _, _, votes = speech_votes(tmp_path, typed=True)
    keys = battle_outputs(votes)
    rows = votes.table.to_pylist()
    expected = {(r["arena"], r[f"model_{s}"], r[f"model_{s}_version"], r["prompt_id"])
                for r in rows if r["prompt_id"] is not None for s in "ab"}  # fmt: skip
    assert {(k.arena, k.model, k.model_version, k.prompt_id) for k in keys} == expected
    assert len(keys) == len(expected) and all(k.prompt_id is not None for k in keys)
    assert any(r["prompt_id"] is None for r in rows)  # the typed one was there, and left out


def test_audio_files_read_back_with_datasets_offline(tmp_path):
    datasets = pytest.importorskip("datasets")
    service, pool, votes = speech_votes(tmp_path)
    lookup = cache_lookup(service.pools, pool._cache)
    written = write_audio(tmp_path / "out", battle_outputs(votes), lookup)
    assert written and all(rel.startswith(f"{AUDIO_DIR}/tts/") for rel in written)
    loaded = datasets.load_dataset("parquet", data_files=[str(p) for p in written.values()],
                                   split="train")  # fmt: skip
    assert isinstance(loaded.features["audio"], datasets.Audio)
    raw = loaded.cast_column("audio", datasets.Audio(decode=False))
    for row in raw:
        key = OutputKey(row["arena"], row["model"], row["model_version"], row["prompt_id"],
                        row["prompt"], row["category"])  # fmt: skip
        output = lookup(key.arena, key.model, key.prompt, key.category, key.model_version)
        samples, rate = soundfile.read(io.BytesIO(row["audio"]["bytes"]), dtype="int16")
        assert rate == row["sample_rate"] == output.sample_rate  # the engine's own rate
        assert np.array_equal(samples, output.samples)  # the cached output, bit for bit
        assert row["duration_s"] == pytest.approx(len(samples) / rate, abs=0.001)
        assert row["model_version"] == pool.model_version(row["model"])


def test_an_output_of_another_engine_version_is_not_published(tmp_path):
    service, pool, votes = speech_votes(tmp_path)
    lookup = cache_lookup(service.pools, pool._cache)
    key = battle_outputs(votes)[0]
    assert lookup(key.arena, key.model, key.prompt, key.category, key.model_version) is not None
    assert lookup(key.arena, key.model, key.prompt, key.category, "0.0-old") is None
    assert lookup("no-arena", key.model, key.prompt, key.category, key.model_version) is None


def test_publishing_adds_only_what_the_repo_lacks_and_both_configs_load(tmp_path):
    datasets = pytest.importorskip("datasets")
    service, pool, votes = speech_votes(tmp_path)
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset")
    lookup = cache_lookup(service.pools, pool._cache)
    first = publish_audio(api, REPO, votes, lookup, tmp_path / "work")
    assert first == len(battle_outputs(votes)) and len(api.commits) == 1
    assert publish_audio(api, REPO, votes, lookup, tmp_path / "work2") == 0  # nothing new
    assert len(api.commits) == 1
    repo = api.repo_dir(REPO)
    (repo / "README.md").write_text(dataset_card(REPO, arenas=("tts",)))
    write_parquet(read_votes(tmp_path / "votes").table, repo / "data" / "votes.parquet")
    audio = datasets.load_dataset(str(repo), "audio", split="train")
    assert len(audio) == first and isinstance(audio.features["audio"], datasets.Audio)
    default = datasets.load_dataset(str(repo), split="train")
    assert len(default) == 6 and "counted" in default.column_names


def test_the_publisher_waits_for_the_hub(tmp_path):
    service, pool, votes = speech_votes(tmp_path)
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset")

    class Sync:  # the HubSync attributes the publisher reads
        uploader, repo_id = None, REPO

    sync = Sync()
    sync.api = api
    publisher = AudioPublisher(sync, lambda: votes, cache_lookup(service.pools, pool._cache),
                               tmp_path / "work")  # fmt: skip
    assert publisher.run_once() == 0 and not api.commits  # not connected yet
    sync.uploader = object()
    assert publisher.run_once() == len(battle_outputs(votes))


def test_compacted_files_carry_the_boards_own_verdict(tmp_path):
    service, _ = campaign_service(tmp_path)
    campaign(service)
    assert service.detector.flagged.get("campaign") is not None
    service.close()
    old = time.time() - 7200
    for path in (tmp_path / "votes").glob("*.jsonl"):
        os.utime(path, (old, old))
    written = read_votes(tmp_path / "votes").table.to_pylist()
    # As written: the campaign's first votes looked counted (no one knew yet).
    assert any(r["voter"] == "campaign" and r["counted"] for r in written)
    report = compact(tmp_path / "votes", min_age_minutes=60)
    assert report.votes == len(written)
    rows = pq.read_table(report.written[0]).to_pylist()
    campaign_rows = [r for r in rows if r["voter"] == "campaign"]
    assert campaign_rows and not any(r["counted"] for r in campaign_rows)
    assert {r["count_reason"] for r in campaign_rows} == {"anomalous_voter"}
    assert all(r["counted"] and r["count_reason"] is None for r in rows if r["voter"] != "campaign")
    # Exactly the board's count: the board of the compacted log uses the counted rows.
    votes = read_votes(tmp_path / "votes")
    board = board_from_votes(votes, "speech", params=BoardParams())
    assert board.votes_used == sum(r["counted"] for r in rows)
    counted, reason = replay_verdict(votes)
    assert counted.to_pylist() == read_votes(tmp_path / "votes").column("counted").to_pylist()
    assert reason.to_pylist() == votes.column("count_reason").to_pylist()
