"""The service's side of integrity: flagged voters leave the live board as they leave the replay,
and a restart keeps both the rate limit and the flags."""

import json
import logging
import os
import threading
import time
from datetime import timedelta

import numpy as np
import pytest
from fakes import REGISTRY, FakeBackend, SteadyVoteClock
from test_hub import PROMPTS
from test_hub import REGISTRY as SPEECH_REGISTRY
from test_service import logged, make_service

from arena_core.backends import ModelPool
from arena_core.leaderboard import BoardParams, Entrant, board_from_votes
from arena_core.registry import parse_registry
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService
from arena_core.space.startup import build_service
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes

#: Models of the fake arena that speak English; by the test's truth m0 > m1 > m2.
ENGLISH = ("m0", "m1", "m2")


def battle(service, a, b):
    """A battle between chosen models (the service draws pairs at random; the test needs these)."""
    handle, _ = service.book.open(arena="speech", model_a=a, model_b=b, prompt="Hello there.",
                                  prompt_id="p1", category="en")  # fmt: skip
    service.book.delivered(handle)
    return handle


def campaign_service(tmp_path, **kwargs):
    """A service for :func:`campaign`: no rate limit in the way, and votes stamped by a steady
    clock so the test flags the same voters on every run (see ``SteadyVoteClock``)."""
    return make_service(tmp_path, rate_limit=1000, vote_clock=SteadyVoteClock(), **kwargs)


def campaign(service, rounds=240, seed=1):
    """Eight honest voters who prefer the lower-numbered model, and one who always votes m2."""
    rng = np.random.default_rng(seed)
    reveals = []
    for k in range(rounds):
        a, b = rng.choice(ENGLISH, size=2, replace=False)
        better = "a" if a < b else "b"
        service.vote(
            battle(service, a, b), better if rng.random() < 0.9 else "tie", voter=f"h{k % 8}"
        )
        if k % 6 == 5:
            a, b = ("m2", rng.choice(ENGLISH[:2]))[:: 1 if rng.random() < 0.5 else -1]
            reveals.append(
                service.vote(battle(service, a, b), "a" if a == "m2" else "b", voter="campaign")
            )
    return reveals


def last_row(service):
    """The last vote this service wrote (each process has a shard of its own)."""
    return json.loads(service.vote_log.path.read_text().splitlines()[-1])


def replayed(tmp_path, category=None):
    arena = parse_registry(REGISTRY).arena("speech")
    return board_from_votes(read_votes(tmp_path / "votes"), "speech", category=category,
                            entrants=Entrant.from_arena(arena), params=BoardParams())  # fmt: skip


def test_a_flagged_voter_leaves_the_live_board_exactly_as_the_replay_leaves_them_out(tmp_path):
    service, _ = campaign_service(tmp_path)
    reveals = campaign(service)
    at = service.detector.flagged.get("campaign")
    assert at is not None and set(service.detector.flagged) == {"campaign"}
    rows = [r for r in logged(tmp_path) if r["voter"] == "campaign"]
    # Written before anyone knew: no flag; written after: flagged.
    assert [r["flags"] for r in rows] == [[]] * at + [["anomalous_voter"]] * (len(rows) - at)
    assert all(not r.counted and "differ" in r.note for r in reveals[at - 1 :])
    assert service.rebuilds.wait(60)  # their earlier votes leave the boards in the background
    live = service.board("speech")
    assert live.skipped == {"anomalous_voter": at, "flagged": len(rows) - at}
    assert live.to_json() == replayed(tmp_path).to_json()
    assert service.board("speech", "en").to_json() == replayed(tmp_path, "en").to_json()
    # An honest vote after the rebuild still moves the board, and both stay equal.
    service.vote(battle(service, "m0", "m1"), "a", voter="h1")
    assert not service.rebuilds.running
    assert service.board("speech").to_json() == replayed(tmp_path).to_json()


def test_a_restart_remembers_the_flagged_voters(tmp_path):
    first, _ = campaign_service(tmp_path)
    campaign(first)
    assert first.rebuilds.wait(60)
    restarted, _ = campaign_service(tmp_path)
    assert restarted.detector.flagged == first.detector.flagged
    assert restarted.board("speech").to_json() == first.board("speech").to_json()
    reveal = restarted.vote(battle(restarted, "m2", "m0"), "a", voter="campaign")
    assert not reveal.counted and last_row(restarted)["flags"] == ["anomalous_voter"]


def test_votes_cast_while_loading_by_a_flagged_voter_leave_the_board_too(tmp_path):
    first, _ = campaign_service(tmp_path)
    campaign(first)
    registry = parse_registry(REGISTRY)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: FakeBackend(m) for m in arena.models})
    loading = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes"))
    reveal = loading.vote(battle(loading, "m2", "m1"), "a", voter="campaign")  # not yet known
    assert last_row(loading)["flags"] == [] and "still loading" in reveal.note
    loading.load()
    board = loading.board("speech")
    assert board.skipped["anomalous_voter"] == first.detector.flagged["campaign"] + 1
    assert board.to_json() == replayed(tmp_path).to_json()


def test_a_restart_does_not_reset_the_rate_limit(tmp_path):
    # Votes are stamped by a steady clock, and each restart's wall clock follows it: voter v
    # casts five votes and is tested for anomalous voting, which with wall-clock stamps
    # flagged it about one run in 700 (its fifth vote then did not count).
    votes = SteadyVoteClock()
    now = lambda: votes.now  # noqa: E731
    service, _ = make_service(tmp_path, rate_limit=3, rate_window=600, vote_clock=votes)
    assert all(service.vote(battle(service, "m0", "m1"), "a", voter="v").counted for _ in range(3))
    restarted, _ = make_service(tmp_path, rate_limit=3, rate_window=600, vote_clock=votes,
                                wall_clock=now)  # fmt: skip
    reveal = restarted.vote(battle(restarted, "m0", "m1"), "a", voter="v")
    assert not reveal.counted and last_row(restarted)["flags"] == ["rate_limited"]
    assert restarted.vote(battle(restarted, "m0", "m1"), "a", voter="w").counted
    # Ten minutes later the three counted votes have left the window (the refused one never
    # entered it): the voter counts again.
    votes.now += timedelta(seconds=601)
    after, _ = make_service(tmp_path, rate_limit=3, rate_window=600, vote_clock=votes,
                            wall_clock=now)  # fmt: skip
    assert after.vote(battle(after, "m0", "m1"), "a", voter="v").counted


def test_the_identity_rule_is_logged_at_start_up(tmp_path, caplog):
    (tmp_path / "registry.yaml").write_text(SPEECH_REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data",
                        voter_salt="s", trusted_proxies=1)  # fmt: skip
    caplog.set_level(logging.INFO)
    build_service(settings, env={"PATH": os.environ.get("PATH", "")}).close()
    assert "voters are identified by the signed-in Hugging Face user, else the client address: " \
           "entry 1 from the right of X-Forwarded-For (ARENA_TRUSTED_PROXIES=1)" in caplog.text  # fmt: skip


def test_a_flag_raised_inside_a_group_commit_counts_the_rest_of_the_batch_once(tmp_path):
    """Concurrent votes share one write (VoteLog's group commit) and are applied one by one
    afterwards. A voter flagged on one of them rebuilds the boards from the log, which already
    holds the batch's later votes: they must not be counted by the rebuild and again when
    applied. Batches are formed by holding the log's lock while threads queue their votes."""

    service, _ = campaign_service(tmp_path)
    rng = np.random.default_rng(1)
    votes = []
    for k in range(240):
        a, b = rng.choice(ENGLISH, size=2, replace=False)
        votes.append((a, b, "a" if a < b else "b", f"h{k % 8}"))
        if k % 6 == 5:
            a, b = ("m2", rng.choice(ENGLISH[:2]))[:: 1 if rng.random() < 0.5 else -1]
            votes.append((a, b, "a" if a == "m2" else "b", "campaign"))
    # Each campaign vote leads a batch, the honest votes after it follow in the same write:
    # whichever campaign vote gets its voter flagged, six votes come after it in its batch.
    starts = [0] + [k for k, (*_, voter) in enumerate(votes) if voter == "campaign"]
    for start, end in zip(starts, [*starts[1:], len(votes)], strict=True):
        group = votes[start:end]
        handles = [battle(service, a, b) for a, b, _, _ in group]
        threads = []
        with service.vote_log.lock:
            for handle, (_, _, choice, voter) in zip(handles, group, strict=True):
                queued = len(service.vote_log._queue)
                threads.append(threading.Thread(target=service.vote, args=(handle, choice, voter)))
                threads[-1].start()
                while len(service.vote_log._queue) == queued:  # keep the batch in this order
                    time.sleep(0.0005)
        for thread in threads:
            thread.join()
    assert "campaign" in service.detector.flagged and service.rebuilds.wait(60)
    assert service.vote_log.written == len(votes) == len(logged(tmp_path))
    live = service.board("speech")
    assert live.to_json() == replayed(tmp_path).to_json()
    assert live.votes_used == replayed(tmp_path).votes_used


def test_a_voter_flagged_at_a_rate_limited_vote_leaves_the_board_too(tmp_path):
    """The anomalous-voter test can tip on a vote that was over the rate limit: that vote
    carries a flag already, and the live board once kept the voter's earlier counted vote
    (the replay leaves it out), so the two disagreed for good."""
    service, _ = make_service(tmp_path, rate_limit=5, rate_window=600, vote_clock=SteadyVoteClock())
    # Honest voters, five votes each: never over the limit, and each one's 5th vote enters
    # the reference (a voter's earlier ones never do).
    for _ in range(5):
        for k in range(20):
            service.vote(battle(service, "m0", "m1"), "a" if k % 5 else "tie", voter=f"h{k}")
    for j in range(12):  # five votes like everyone's, then against everyone, over the limit
        service.vote(battle(service, "m0", "m1"), "a" if j < 5 else "both_bad", voter="odd")
    assert service.detector.flagged == {"odd": 10}
    rows = [r for r in logged(tmp_path) if r["voter"] == "odd"]
    tipped = rows[service.detector.flagged["odd"] - 1]
    assert "rate_limited" in tipped["flags"] and "anomalous_voter" not in tipped["flags"]
    assert service.rebuilds.wait(60)
    live = service.board("speech")
    assert live.skipped["anomalous_voter"] == 5  # the five votes of theirs that had counted
    assert live.to_json() == replayed(tmp_path).to_json()


def test_votes_cast_during_the_start_up_replay_wait_for_the_rate_limit(tmp_path, monkeypatch):
    """While a restart reads the log, the limiter does not know anyone's recent votes: a
    voter at the limit got three more counted votes then. Now a vote waits for the read."""
    import arena_core.votes.read as read_module

    votes = SteadyVoteClock()
    service, _ = make_service(tmp_path, rate_limit=3, rate_window=600, vote_clock=votes)
    assert all(service.vote(battle(service, "m0", "m1"), "a", voter="v").counted for _ in range(3))
    reading, go_on = threading.Event(), threading.Event()
    real_read = read_module.read_votes

    def slow_read(files, *args, **kwargs):
        reading.set()
        assert go_on.wait(30)
        return real_read(files, *args, **kwargs)

    monkeypatch.setattr(read_module, "read_votes", slow_read)  # the replay's read (read_listed)
    registry = parse_registry(REGISTRY)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: FakeBackend(m) for m in arena.models})
    restarted = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes", clock=votes),
                             rate_limit=3, rate_window=600, wall_clock=lambda: votes.now)  # fmt: skip
    loading = restarted.start_loading()
    assert reading.wait(30)
    reveals = []
    voter = threading.Thread(target=lambda: reveals.append(
        restarted.vote(battle(restarted, "m0", "m1"), "a", voter="v")))  # fmt: skip
    voter.start()
    voter.join(0.5)
    assert voter.is_alive() and not reveals  # waiting for the log's recent votes
    go_on.set()
    voter.join(30)
    loading.join(30)
    assert not reveals[0].counted and last_row(restarted)["flags"] == ["rate_limited"]
    assert restarted.board("speech").to_json() == replayed(tmp_path).to_json()


def test_a_compaction_during_the_start_up_replay_costs_the_board_no_vote(tmp_path, monkeypatch):
    """The replay lists the vote files, then reads them; a compaction that finished in
    between (or while the replay read them) deleted a listed shard: the replay failed whole
    (a board of 0 votes) or counted the shard unreadable and missed the new monthly part."""
    import arena_core.votes.read as read_module
    from arena_core.dataset.compact import compact

    old = time.time() - 7200
    for run in range(2):  # two earlier runs of the Space, six votes each, an hour old
        earlier = VoteLog(tmp_path / "votes")
        for k in range(6):
            earlier.append(arena="speech", model_a="m0", model_b="m1", vote="ab"[run],
                           voter=f"v{run}{k}", category="en")  # fmt: skip
        earlier.close()
        os.utime(earlier.path, (old, old))
    real_read, reads = read_module.read_jsonl, []

    def read_then_compact(path, *args, **kwargs):
        table = real_read(path, *args, **kwargs)
        reads.append(path)
        if len(reads) == 1:  # the other shard is listed, not read yet: it moves now
            assert compact(tmp_path / "votes").votes == 12
        return table

    monkeypatch.setattr(read_module, "read_jsonl", read_then_compact)
    service, _ = make_service(tmp_path)
    monkeypatch.undo()
    board = service.board("speech")
    assert (
        board.votes_used == 12 and not service.progress.skipped and service.progress.error is None
    )
    assert board.to_json() == replayed(tmp_path).to_json()


def test_a_vote_while_the_clock_is_far_behind_says_when_to_come_back(tmp_path):
    """After the server's clock stepped back an hour the log refuses votes (none is dated
    where replays skip it); the visitor is told for how long, not to vote again at once."""
    from datetime import UTC, datetime

    from arena_core.space.views import ArenaError

    start = datetime(2026, 12, 1, 12, tzinfo=UTC)
    now = [start + timedelta(hours=1)]
    service, _ = make_service(tmp_path, vote_clock=lambda: now[0])
    assert service.vote(battle(service, "m0", "m1"), "a", voter="v").counted
    now[0] = start
    handle = battle(service, "m0", "m1")
    with pytest.raises(ArenaError, match="about 50 minutes") as refused:
        service.vote(handle, "b", voter="w")
    assert "not saved" in str(refused.value) and len(logged(tmp_path)) == 1


def test_votes_cast_during_the_start_up_replay_keep_the_logs_order(tmp_path, monkeypatch):
    """A restart on a machine whose clock is 60 s behind the last run's (the log accepts up
    to ten minutes): votes cast while the replay ran were stamped before the log's clock was
    moved past the replayed votes, so they sorted before the last run's final votes while the
    live board and the detector took them after: the Space's board was not the CLI's."""
    import arena_core.space.replay as replay_module

    first, _ = campaign_service(tmp_path)
    campaign(first, rounds=120)
    assert first.rebuilds.wait(60)
    behind = SteadyVoteClock(start=first.vote_log._last - timedelta(seconds=60))
    registry = parse_registry(REGISTRY)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: FakeBackend(m) for m in arena.models})
    restarted = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes", clock=behind),
                             rate_limit=1000)  # fmt: skip
    real = replay_module.detection_of

    def during_replay(*args, **kwargs):  # the limiter is restored; the replay goes on
        monkeypatch.setattr(replay_module, "detection_of", real)
        for k in range(6):
            restarted.vote(battle(restarted, "m2", "m0"), "a", voter=f"early{k}")
        return real(*args, **kwargs)

    monkeypatch.setattr(replay_module, "detection_of", during_replay)
    restarted.load()
    assert restarted.rebuilds.wait(60)
    assert restarted.board("speech").to_json() == replayed(tmp_path).to_json()
    restarted.close()
