"""Votes are sacred: defects found by the Space-runtime and Hub-sync hunt (session 32).

Each test failed on the code before its fix; the docstring says what a visitor, an adversary
or an operator did, and what went wrong.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading

import httpx2
import pytest
from fakes import REGISTRY as FAKE_REGISTRY
from fakes import FakeBackend, SteadyVoteClock
from hubfake import (
    PROMPTS,
    REGISTRY,
    REPO,
    Landed,
    LocalHubApi,
    raw_vote_ids,
    refused,
    row,
    settled,
    timed_out,
    unavailable,
    writer,
)
from huggingface_hub.errors import HfHubHTTPError
from test_service import logged, make_service
from test_service_integrity import battle

from arena_core.backends import ModelPool
from arena_core.registry import parse_registry
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService
from arena_core.space.startup import build_service
from arena_core.votes import log as vote_log
from arena_core.votes.log import VoteLog, VoteWriteError
from arena_core.votes.read import read_votes


def _folder_fsyncs(monkeypatch) -> list[int]:
    """Record each fsync of a folder (the shard's directory entry made durable)."""
    real_fsync, synced = os.fsync, []

    def fsync(fd):
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            synced.append(fd)
        return real_fsync(fd)

    monkeypatch.setattr(vote_log.os, "fsync", fsync)
    return synced


def test_a_shard_created_by_a_failed_write_gets_its_folder_synced_at_the_first_vote(
    tmp_path, monkeypatch
):
    """A full disk at the first vote of a process: ``open(O_CREAT)`` created the shard, the
    write failed and was cut back to nothing, the vote refused. The next vote found the
    shard existing and skipped the folder's fsync, which only a vote that creates the file
    did: that vote (and every later one) was acknowledged while the shard's directory entry
    was never made durable, so a power cut could take the whole shard, acknowledged votes
    and all. The folder is now synced at the first vote written, whoever created the file.
    """
    real_write, failures = os.write, [1]

    def write(fd, data):
        if failures[0]:
            failures[0] -= 1
            raise OSError(28, os.strerror(28))
        return real_write(fd, data)

    store = VoteLog(tmp_path)
    monkeypatch.setattr(vote_log.os, "write", write)
    with pytest.raises(VoteWriteError) as refused_vote:
        store.append(arena="x", model_a="a", model_b="b", vote="a")
    assert refused_vote.value.rolled_back
    assert store.path.exists() and store.path.stat().st_size == 0
    synced = _folder_fsyncs(monkeypatch)
    store.append(arena="x", model_a="a", model_b="b", vote="b")
    assert synced, "the vote was acknowledged before the shard's directory entry was durable"
    assert read_votes(tmp_path).column("vote").to_pylist() == ["b"]


def test_a_folder_fsync_that_failed_is_done_again_before_the_next_vote_is_acknowledged(
    tmp_path, monkeypatch
):
    """The README's fault "the folder's fsync failing on a new shard": the vote is refused
    and cut back, but the file stays, empty. The next vote skipped the folder's fsync (the
    file existed), so it was acknowledged with the directory entry still not durable."""
    real_fsync, failures = os.fsync, [1]

    def fsync(fd):
        if failures[0] and os.path.isdir(f"/proc/self/fd/{fd}"):
            failures[0] -= 1
            raise OSError(5, os.strerror(5))
        return real_fsync(fd)

    store = VoteLog(tmp_path)
    monkeypatch.setattr(vote_log.os, "fsync", fsync)
    with pytest.raises(VoteWriteError) as refused_vote:
        store.append(arena="x", model_a="a", model_b="b", vote="a")
    assert refused_vote.value.rolled_back
    synced = _folder_fsyncs(monkeypatch)
    store.append(arena="x", model_a="a", model_b="b", vote="b")
    assert synced
    synced.clear()
    store.append(arena="x", model_a="a", model_b="b", vote="tie")
    assert not synced  # once durable, a vote costs no folder fsync


def _append(log, vote="a"):
    return log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb", vote=vote)


def test_a_landed_adoption_retried_with_a_neighbours_votes_is_not_pushed_twice(tmp_path):
    """A restart on a kept disk: an earlier run's shard lacks three votes on the Hub (adopted
    by the new process) and the old process still holds its own shard. The new process's
    first push of the adopted votes reached the Hub, its answer lost. Before the retry the
    old process exited with its last push failed, so its votes were adopted too, and the
    retry named its file after every adopted vote id: a new name, ``adopted-<digest>``,
    beside the landed one. The three votes then sat in two files of the dataset
    (``datasets.load_dataset`` counts them twice; every replay skips a copy as
    ``duplicate_vote_id``). Each adoption now keeps a file name of its own, so a retry
    rewrites the landed file and adds the new votes in another. The Hub is ``LocalHubApi``.
    """
    api = LocalHubApi(tmp_path / "hub")
    old, old_log = writer(tmp_path / "data", api)
    settled(old)
    acked = [_append(old_log, v).vote_id for v in "ab"]  # the old process's, waiting
    earlier = tmp_path / "data" / "votes" / "votes-earlier-run.jsonl"  # no process holds it
    earlier.write_text("".join(json.dumps(row(k)) + "\n" for k in range(3)))
    acked += [row(k)["vote_id"] for k in range(3)]
    api.failures = [unavailable()]  # the scheduler's first tick, if it has the votes already
    new, new_log = writer(tmp_path / "data", api)  # adopts the earlier shard's three votes
    with contextlib.suppress(HfHubHTTPError):
        settled(new)
    new.uploader.stop()  # the pushes below are the only ones
    api.failures = [Landed(timed_out())]
    with pytest.raises(httpx2.ReadTimeout):
        new.uploader.push_to_hub()  # it landed; the answer was lost
    api.failures = [unavailable()]
    old.flush(timeout=5)  # SIGTERM: the old process's last push fails...
    old_log.close()  # ... and it exits
    acked.append(_append(new_log, "tie").vote_id)
    new.uploader.push_to_hub()  # the retry, with the old process's votes adopted
    counts = raw_vote_ids(api)
    assert set(counts) == set(acked)
    assert {v: n for v, n in counts.items() if n > 1} == {}


@pytest.fixture
def speech(tmp_path):
    """The Hub tests' speech arena, a ``LocalHubApi`` Hub, and settings at a rate limit of 3."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = LocalHubApi(tmp_path / "hub")
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "run1",
                        voter_salt="s", dataset_repo=REPO, push_minutes=60, listen_share=0.0,
                        rate_limit=3, rate_window=600)  # fmt: skip
    return settings, api


def _service(settings, api):
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")}, hf_api=api)
    service.load()
    return service


def _vote(service, voter="v", choice="a"):
    view = service.new_battle("speech")
    return service.vote(view.handle, choice, voter=voter)


def test_a_restart_during_a_hub_outage_restores_the_rate_limit_once_the_hub_answers(speech):
    """A Space restarts (a fresh disk: its votes are on the Hub only) while the Hub does not
    answer. Once it answers, the Hub's votes were replayed into the boards and the sessions
    but not into the rate limiter: a voter who had spent the whole quota a minute before the
    restart got a fresh one, three more counted votes in the same ten minutes. The limiter
    now takes the recent votes the Hub brought (and only those: this run's own votes are in
    it already)."""
    settings, api = speech
    first = _service(settings, api)
    assert all(_vote(first).counted for _ in range(3))  # the quota, spent
    first.sync.flush()
    first.close()
    api.down = refused()
    restarted = _service(
        Settings(**{**settings.__dict__, "data_dir": settings.data_dir.parent / "run2"}), api
    )
    assert restarted.sync.uploader is None  # the Hub does not answer: retried in the background
    assert _vote(restarted, voter="w").counted  # another voter, during the outage
    api.down = None
    assert restarted.sync.connect()  # the Hub answers: download, replay
    assert restarted.board("speech").votes_used == 4
    reveal = _vote(restarted)
    assert not reveal.counted, "the voter's quota was handed out again after the restart"
    assert _vote(restarted, voter="w").counted and _vote(restarted, voter="w").counted
    assert not _vote(restarted, voter="w").counted  # w's outage vote is counted once, not twice
    restarted.sync.flush()
    restarted.close()


def test_a_session_voting_during_the_start_up_replay_keeps_its_order(tmp_path, monkeypatch):
    """An API client (one session for its whole life) votes three times, the Space restarts,
    and it votes again while the restart still reads the log (written with session_order
    null, as the rank is not known yet) and once more after. The restored count was the
    larger of the log's three and this run's one, so the last vote was written as the
    session's 4th although it is its 5th by ts, and every later vote of the session one
    short. The start-up replay reads every shard but this run's own, so the two counts are
    now added."""
    votes = SteadyVoteClock()
    first, _ = make_service(tmp_path, rate_limit=1000, vote_clock=votes)
    for _ in range(3):
        first.vote(battle(first, "m0", "m1"), "a", voter="v", session="s")
    registry = parse_registry(FAKE_REGISTRY)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: FakeBackend(m) for m in arena.models})
    restarted = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes", clock=votes),
                             rate_limit=1000, wall_clock=lambda: votes.now)  # fmt: skip
    voted = threading.Event()
    real_restore = restarted.sessions.restore

    def restore(counts, **kwargs):  # the replay reaches the sessions once the vote below is written
        assert voted.wait(30)
        return real_restore(counts, **kwargs)

    monkeypatch.setattr(restarted.sessions, "restore", restore)
    loading = restarted.start_loading()
    during = restarted.vote(battle(restarted, "m0", "m1"), "a", voter="v", session="s")
    voted.set()
    loading.join(30)
    assert not during.counted  # queued until the replay is done
    restarted.vote(battle(restarted, "m0", "m1"), "a", voter="v", session="s")
    rows = sorted(logged(tmp_path), key=lambda r: r["ts"])
    assert [r["session_order"] for r in rows] == [1, 2, 3, None, 5]
