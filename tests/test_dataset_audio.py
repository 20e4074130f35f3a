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


def _edited_run(tmp_path):
    """Six votes, then the registry's prompt ``p0`` edited under the same id (the Space
    restarted on the same vote folder and cache), then six more: both texts in the votes."""
    import copy

    import test_space_style
    from test_pacing import REGISTRY as TONES

    edited = copy.deepcopy(TONES)
    for arena in edited["arenas"]:
        arena["prompts"] = [{"id": "p0", "text": "Hello again, edited."}]
    service, _, _ = speech_votes(tmp_path)
    real = test_space_style.REGISTRY
    test_space_style.REGISTRY = edited
    try:
        service, pool = build(tmp_path)
    finally:
        test_space_style.REGISTRY = real
    for _ in range(6):
        view = service.new_battle("tts")
        service.vote(view.handle, "a", voter="w")
    service.close()
    votes = read_votes(tmp_path / "votes", columns=COLUMNS)
    texts = {r["prompt"] for r in votes.table.to_pylist() if r["prompt_id"] == "p0"}
    assert len(texts) == 2, texts  # the edit is in the log
    return service, pool, votes


def _joined(api, votes):
    """Each vote side's join key (the card's), and the audio rows it joins to."""
    rows = pq.read_table(api.repo_dir(REPO) / AUDIO_DIR).to_pylist()
    key = ("arena", "model", "model_version", "prompt_id", "prompt", "category")
    index = {}
    for row in rows:
        index.setdefault(tuple(row[k] for k in key), []).append(row)
    for vote in votes.table.to_pylist():
        for side in "ab":
            want = (vote["arena"], vote[f"model_{side}"], vote[f"model_{side}_version"],
                    vote["prompt_id"], vote["prompt"], vote["category"])  # fmt: skip
            yield want, index.get(want, [])


def test_a_prompt_edited_under_its_id_publishes_the_new_texts_audio(tmp_path):
    """An edited prompt's outputs are new outputs: each vote joins to the audio of the text
    it was cast on. Before, a file was named by the prompt's id alone, so the new text's
    audio was never published and its votes joined to the old text's audio."""
    service, pool, votes = _edited_run(tmp_path)
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset")
    lookup = cache_lookup(service.pools, pool._cache)
    assert publish_audio(api, REPO, votes, lookup, tmp_path / "work") == len(battle_outputs(votes))
    for want, found in _joined(api, votes):
        assert len(found) == 1, want
        output = lookup(want[0], want[1], want[4], want[5], want[2])
        samples, _ = soundfile.read(io.BytesIO(found[0]["audio"]["bytes"]), dtype="int16")
        assert np.array_equal(samples, output.samples), want  # the text the vote heard
    assert publish_audio(api, REPO, votes, lookup, tmp_path / "work2") == 0


def test_files_named_before_the_text_counted_are_not_published_twice(tmp_path):
    """A repo published by the code before (files named by the prompt's id alone): an
    output whose prompt kept its text is not added again under the new name; one whose
    prompt was edited is added for each text (the old file holds one of them)."""
    import shutil

    service, pool, votes = speech_votes(tmp_path)
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset")
    lookup = cache_lookup(service.pools, pool._cache)
    publish_audio(api, REPO, votes, lookup, tmp_path / "work")
    audio = api.repo_dir(REPO) / AUDIO_DIR
    for key in battle_outputs(votes):  # rename each file as the code before named it
        old = api.repo_dir(REPO) / key.legacy_path()
        shutil.move(api.repo_dir(REPO) / key.path(), old)
    before = sorted(p.relative_to(audio) for p in audio.rglob("*.parquet"))
    assert publish_audio(api, REPO, votes, lookup, tmp_path / "work2") == 0
    assert sorted(p.relative_to(audio) for p in audio.rglob("*.parquet")) == before
    # The same with a prompt edited under its id: the code before kept one file per id.
    service, pool, edited = _edited_run(tmp_path / "second")
    api = LocalHubApi(tmp_path / "hub2")
    api.create_repo(REPO, repo_type="dataset")
    lookup = cache_lookup(service.pools, pool._cache)
    keys = battle_outputs(edited)
    publish_audio(api, REPO, edited, lookup, tmp_path / "work3")
    for key in keys:
        shutil.move(api.repo_dir(REPO) / key.path(), api.repo_dir(REPO) / key.legacy_path())
    shared = [k for k in keys if sum(o.legacy_path() == k.legacy_path() for o in keys) > 1]
    assert shared and all(k.prompt_id == "p0" for k in shared)
    assert publish_audio(api, REPO, edited, lookup, tmp_path / "work4") == len(shared)
    for want, found in _joined(api, edited):
        output = lookup(want[0], want[1], want[4], want[5], want[2])
        assert found, want
        for row in found:  # the old file, where it joins, holds its own text's audio
            samples, _ = soundfile.read(io.BytesIO(row["audio"]["bytes"]), dtype="int16")
            assert np.array_equal(samples, output.samples), want
