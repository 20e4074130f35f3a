"""What a Space running for weeks must not accumulate: state held per battle, vote or view
that is never let go, and work per request that grows with the votes already cast."""

import json
import os
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from conftest import launch_on_free_port
from fakes import REGISTRY, FakeBackend
from gradio_client import Client

from arena_core.backends import ModelPool, Output
from arena_core.registry import parse_registry
from arena_core.snapshots.revision import LiveRevisions
from arena_core.space.clips import FORGET_EVERY
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog
from arena_core.votes.read import vote_files


class LongTone(FakeBackend):
    """Speaks a 3-second tone whatever the prompt (96 kB a clip: a 1 MB store holds ten)."""

    modalities = frozenset({"audio"})

    def _generate(self, text, timeout, language):
        t = np.arange(48_000) / 16_000
        return Output.from_audio(16_000, 0.3 * np.sin(2 * np.pi * 440 * t))


def test_gradio_forgets_the_paths_of_clips_the_store_no_longer_holds(tmp_path):
    """Gradio records every clip path a battle sends as one of its files, and its clean-up
    forgets only files it deletes: a clip is never a file, so each battle added two paths
    for good (checked on disk by every clean-up). They must stay about the clips held."""
    from app import build_demo, clip_store, launch_options

    registry = parse_registry({"arenas": [{**REGISTRY["arenas"][0], "modality": "audio"}]})
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: LongTone(m) for m in arena.models})
    service = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes"))
    service.load()
    settings = Settings(data_dir=tmp_path, voter_salt="soak", listen_share=0.0, clip_mb=1)
    clips = clip_store(settings)
    demo = build_demo(service, settings, clips)
    battles = 60
    try:
        demo.queue(default_concurrency_limit=8)
        url = launch_on_free_port(demo, **launch_options(settings, clips))
        client = Client(url, analytics_enabled=False, verbose=False, download_files=False)
        for _ in range(battles):
            client.predict("speech", "", api_name="/new_battle")
    finally:
        demo.close()
        service.close()
    prefix = os.path.join(os.path.abspath(clips.folder), "")
    recorded = {p for record in demo.temp_file_sets for p in record
                if isinstance(p, str) and p.startswith(prefix)}  # fmt: skip
    assert clips.evicted > battles  # most clips were let go
    assert len(recorded) <= len(clips) + 2 * FORGET_EVERY  # not two per battle ever sent


def _vote_lines(n, start_ms):
    line = {"schema_version": 1, "arena": "a", "model_a": "x", "model_b": "y", "vote": "a"}
    out = []
    for k in range(n):
        ts = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=start_ms + k)
        out.append(json.dumps({**line, "vote_id": str(uuid.uuid4()),
                               "ts": ts.isoformat().replace("+00:00", "Z")}))  # fmt: skip
    return "\n".join(out) + "\n"


def _read_after_one_vote(revisions, shard, start_ms) -> float:
    """Seconds the revision read takes after one more vote (the best of a few)."""
    times = []
    for k in range(5):
        with open(shard, "a") as f:
            f.write(_vote_lines(1, start_ms + k))
        position = revisions.position()
        started = time.perf_counter()
        revisions.read(position)
        times.append(time.perf_counter() - started)
    return min(times)


def test_a_board_view_reads_only_the_votes_cast_since_the_last_one(tmp_path):
    """The boards' revision is read at each board view. A grown shard was read from where the
    last read ended, but its votes so far were copied into new lists each time: a view cost
    time in proportion to every vote of the shard (50 ms at a million votes)."""
    shard = tmp_path / "votes-soak.jsonl"
    revisions = LiveRevisions(lambda: [p for p, _ in vote_files(tmp_path)], VoteLog(tmp_path).lock)
    shard.write_text(_vote_lines(2_000, 0))
    revisions.read(revisions.position())
    small = _read_after_one_vote(revisions, shard, 10_000)
    with open(shard, "a") as f:
        f.write(_vote_lines(400_000, 20_000))
    revision = revisions.read(revisions.position())
    assert revision.votes_read == 402_005
    large = _read_after_one_vote(revisions, shard, 500_000)
    assert revisions.read(revisions.position()).votes_read == 402_010
    assert large < 3 * small + 0.002, (small, large)


def test_a_hosted_spaces_download_folder_goes_with_its_file(tmp_path):
    """gradio_client downloads each file of a Space's answer into a folder of its own (named
    by the file's hash); the file was removed once read, its folder stayed: one a generation."""
    from arena_core.backends.hosted import _read_result_file

    alone = tmp_path / "download" / "0a1b"
    alone.mkdir(parents=True)
    (alone / "audio.wav").write_bytes(b"RIFF")
    shared = tmp_path / "download" / "2c3d"
    shared.mkdir()
    (shared / "audio.wav").write_bytes(b"RIFF")
    (shared / "other.wav").write_bytes(b"RIFF")  # another download still there
    downloads = tmp_path / "download"
    assert _read_result_file({"path": str(alone / "audio.wav")}, downloads) == b"RIFF"
    assert _read_result_file(str(shared / "audio.wav"), downloads) == b"RIFF"
    assert not alone.exists() and sorted(p.name for p in shared.iterdir()) == ["other.wav"]
    assert (tmp_path / "download").is_dir()  # the client's own folder stays
