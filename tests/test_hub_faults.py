"""The Hub misbehaving: half-written lines, an hour of failed pushes, a Hub that refuses at
start-up, a card that cannot be published; and earlier runs' vote files holding rows this
reader cannot count yet.

The real Hugging Face Hub cannot be reached from the test machine. These tests use
``LocalHubApi`` (tests/hubfake.py), injected as ``hf_api``, which fails with the very
exceptions the real client raises: ``httpx2.ConnectError`` when nothing listens,
``HfHubHTTPError`` built by the client's own ``hf_raise_for_status`` from a 503, and
``httpx2.ReadTimeout``. Time is an injected clock: an hour of outage is twelve
five-minute ticks driven by hand, not an hour of waiting. tests/test_hub_outage.py
drives the real ``HfApi`` against an HTTP stand-in.
"""

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import httpx2
import pytest
from hubfake import (
    PROMPTS,
    REGISTRY,
    REPO,
    Landed,
    LocalHubApi,
    raw_vote_ids,
    refused,
    repo_votes,
    row,
    seed_repo,
    settled,
    timed_out,
    unavailable,
    writer,
)
from huggingface_hub.errors import HfHubHTTPError

from arena_core.dataset.earlier import PUBLISHED_DIR
from arena_core.dataset.repo import compact_repo
from arena_core.page.presenters import sync_line
from arena_core.space.config import Settings
from arena_core.space.startup import build_service
from arena_core.votes import clean
from arena_core.votes.read import read_votes
from arena_core.votes.schema import format_ts

#: The push interval the outage test models (the default ``ARENA_PUSH_MINUTES``).
TICK = timedelta(minutes=5)
T0 = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)


class Clock:
    """A UTC clock that moves only when told."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def append(log, vote="a"):
    return log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb", vote=vote)


def test_a_push_never_carries_a_line_without_its_newline(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)  # the scheduler's own first push, done: on a busy machine it took the vote
    first = append(log)
    # A line still being written (or torn by a crash): the VoteLog writes under the lock a
    # push reads under, and the cut at the last newline is the second guard.
    line = (json.dumps(row(7)) + "\n").encode()
    with sync.lock, log.path.open("ab") as f:
        f.write(line[:-9])
    assert sync.status().waiting == 1  # only complete lines wait
    sync.uploader.trigger().result()
    assert raw_vote_ids(api) == {first.vote_id: 1}
    with sync.lock, log.path.open("ab") as f:
        f.write(line[-9:])
    assert sync.status().waiting == 1
    sync.uploader.trigger().result()
    pushed = repo_votes(api)
    assert raw_vote_ids(api) == {first.vote_id: 1, row(7)["vote_id"]: 1}
    assert not pushed.skipped
    (whole,) = [r for r in pushed.table.to_pylist() if r["vote_id"] == row(7)["vote_id"]]
    assert {k: whole[k] for k in ("ts", "model_a", "model_b", "vote", "voter")} == {
        k: row(7)[k] for k in ("ts", "model_a", "model_b", "vote", "voter")
    }
    sync.flush()


def test_a_damaged_line_is_pushed_as_it_is_so_every_replay_counts_it(tmp_path, caplog):
    """The half line a write leaves when it could not be cut back is skipped and counted by
    the Space's replay of its shard: the pushed commit holds it as it is, so a replay of
    the commit skips and counts it alike, and its good lines still go to Parquet."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    acked = [append(log).vote_id]
    half = b'{"schema_version":4,"vote_id":"half'
    with sync.lock, log.path.open("ab") as f:
        f.write(half + b"\n")  # the next vote ended the half line
    acked.append(append(log, "b").vote_id)
    sync.uploader.trigger().result()
    local, hub = read_votes(sync.votes_dir), repo_votes(api)
    assert dict(local.skipped) == {"invalid_json": 1}
    assert dict(hub.skipped) == dict(local.skipped) and len(hub) == len(local) == 2
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)  # the Parquet file: the good lines
    (damaged,) = (api.repo_dir(REPO) / "data").glob("*.damaged.jsonl")
    assert damaged.read_bytes() == half + b"\n"
    assert "1 damaged vote lines" in caplog.text
    sync.flush()


def test_a_line_skipped_for_its_byte_order_mark_is_skipped_on_the_hub_too(tmp_path):
    """A readable vote behind a UTF-8 byte-order mark, mid-shard: the Space's replay skips
    it. Pushed as the first line of the damaged file, where readers drop a leading mark,
    it became a vote on the Hub; the damaged file starts with a mark of its own instead."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    acked = [append(log).vote_id]
    marked = b"\xef\xbb\xbf" + json.dumps(row(7)).encode()
    with sync.lock, log.path.open("ab") as f:
        f.write(marked + b"\n")
    acked.append(append(log, "b").vote_id)
    sync.uploader.trigger().result()
    local, hub = read_votes(sync.votes_dir), repo_votes(api)
    assert dict(local.skipped) == {"invalid_json": 1} and len(local) == 2
    assert dict(hub.skipped) == dict(local.skipped)
    assert sorted(hub.column("vote_id").to_pylist()) == sorted(acked)
    (damaged,) = (api.repo_dir(REPO) / "data").glob("*.damaged.jsonl")
    assert damaged.read_bytes() == b"\xef\xbb\xbf" + marked + b"\n"
    sync.flush()


def test_the_byte_order_mark_of_a_shards_start_is_not_pushed_as_a_damaged_line(tmp_path):
    """A shard that begins with a byte-order mark (a Windows editor's): the Space's replay
    drops it and counts the first vote, so the push does too, into the Parquet file that
    Parquet-only readers read, with no damaged file."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    with sync.lock, log.path.open("ab") as f:
        f.write(b"\xef\xbb\xbf" + json.dumps(row(7)).encode() + b"\n")
    acked = [row(7)["vote_id"], append(log).vote_id]
    sync.uploader.trigger().result()
    local, hub = read_votes(sync.votes_dir), repo_votes(api)
    assert not local.skipped and not hub.skipped
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    assert not list((api.repo_dir(REPO) / "data").glob("*.damaged.jsonl"))
    sync.flush()


def test_pushes_failing_for_an_hour_lose_nothing_and_double_nothing(tmp_path):
    api, clock = LocalHubApi(tmp_path / "hub"), Clock(T0)
    sync, log = writer(tmp_path / "data", api, clock=clock, every_minutes=TICK.seconds / 60)
    uploader = sync.uploader
    acked = [append(log).vote_id]
    uploader.trigger().result()
    assert sync.status().last_push == T0
    # Refused, 503, timed out, and timed out after the Hub took the commit: twelve ticks.
    kinds = [refused, unavailable, timed_out, lambda: Landed(timed_out())]
    api.failures = [kinds[k % 4]() for k in range(12)]
    for tick in range(1, 13):
        clock.now = T0 + tick * TICK
        acked += [append(log, vote).vote_id for vote in ("a", "b", "tie")]
        with pytest.raises((httpx2.ConnectError, HfHubHTTPError, httpx2.ReadTimeout)):
            uploader.trigger().result()
        status = sync.status()
        assert status.waiting == 3 * tick and status.last_push == T0
        assert status.unreachable_since == T0 + TICK
        assert "Hub unreachable since 2026-11-29 17:05 UTC" in sync_line(status)
    clock.now = T0 + 13 * TICK
    acked.append(append(log, "both_bad").vote_id)
    uploader.trigger().result()
    status = sync.status()
    assert status.waiting == 0 and status.last_push == clock.now
    assert status.unreachable_since is None and status.last_error is None
    assert "unreachable" not in sync_line(status)
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)  # every vote, each in one file once
    sync.flush()


def test_a_landed_push_compacted_before_its_retry_is_held_once(tmp_path):
    """A push the Hub took although its answer was lost is retried under the same name,
    with the same and newer lines. When an hour of failures let ``compact --repo`` roll the
    landed file up first, the retry put its votes back, and the next compaction wrote them
    into a second monthly file: acknowledged votes held twice in the dataset, for good
    (``datasets.load_dataset`` counts them twice). The Hub is ``LocalHubApi``; the Hub's
    commit dates are set by hand, the hour of failures is twelve failed ticks."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync).uploader.stop()  # the pushes below are the only ones
    acked = [append(log).vote_id]
    sync.uploader.push_to_hub()  # data/votes-<shard>-000001.parquet
    api.failures = [Landed(timed_out())] + [timed_out() for _ in range(12)]
    acked += [append(log, "b").vote_id, append(log, "tie").vote_id]
    for _ in range(13):  # the first one landed (000002), its answer lost; then an hour of them
        with pytest.raises(httpx2.ReadTimeout):
            sync.uploader.push_to_hub()
    age_repo(api)
    assert len(compact_hub(api, tmp_path / "c1").rolled) == 2  # the hourly cron
    acked.append(append(log, "both_bad").vote_id)
    sync.uploader.push_to_hub()  # the retry: 000002 again, and the new vote
    age_repo(api)
    report = compact_hub(api, tmp_path / "c2")  # the next cron run
    assert (report.votes, report.already_compacted, len(report.rolled)) == (1, 2, 1)
    assert api.commits[-1]["message"].endswith("(2 already compacted, not written again)")
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)  # every vote, each in one file once
    assert sorted(repo_votes(api).column("vote_id").to_pylist()) == sorted(acked)
    sync.flush()


def age_repo(api, hours=2):
    """Date every file of the stand-in repo's last commit ``hours`` back."""
    repo = api.repo_dir(REPO)
    for path in (repo / "data").rglob("*"):
        if path.is_file():
            api.commit_dates[path.relative_to(repo).as_posix()] = datetime.now(UTC) - timedelta(
                hours=hours
            )


def compact_hub(api, workdir):
    return compact_repo(api, REPO, workdir, min_age_minutes=60)


def test_a_hub_refusing_at_start_is_retried_until_it_answers(tmp_path):
    api, clock = LocalHubApi(tmp_path / "hub"), Clock(T0)
    api.down = refused()
    sync, log = writer(tmp_path / "data", api, clock=clock, retry_seconds=0.05)
    assert sync.uploader is None and not api.created
    acked = [append(log).vote_id, append(log, "b").vote_id]
    status = sync.status()
    assert status.waiting == 2 and status.unreachable_since == T0
    assert "ConnectError" in status.last_error
    assert "Hub unreachable since 2026-11-29 17:00 UTC" in sync_line(status)
    time.sleep(0.2)  # a few attempts while it still refuses
    assert sync.uploader is None
    api.down = None
    deadline = time.monotonic() + 60  # generous: a busy machine stalls threads
    while sync.uploader is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sync.uploader is not None  # the background attempt got through
    sync.flush()
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    assert sync.status().unreachable_since is None


def test_the_last_attempt_at_shutdown_pushes_if_the_hub_is_back(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    api.down = refused()
    sync, log = writer(tmp_path / "data", api)  # next background attempt in a minute
    acked = [append(log).vote_id]
    api.down = None
    sync.flush()
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)


def test_a_card_that_cannot_be_published_stops_nothing(tmp_path, caplog):
    class CardRefused(LocalHubApi):
        def create_commit(self, repo_id, operations, **kwargs):
            if any(op.path_in_repo == "README.md" for op in operations):
                raise unavailable()
            return super().create_commit(repo_id, operations, **kwargs)

    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = CardRefused(tmp_path / "hub")
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data",
                        voter_salt="s", dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")}, hf_api=api)
    service.load()
    assert "could not update the dataset card" in caplog.text
    view = service.new_battle("speech")
    vote = service.vote(view.handle, "a", voter="v")
    assert vote.counted
    service.sync.flush()
    assert len(repo_votes(api)) == 1 and not (api.repo_dir(REPO) / "README.md").exists()
    service.close()


def test_votes_a_neighbour_failed_to_push_are_pushed_once_it_exits(tmp_path):
    """A restart on one disk starts the new process while the old one still runs: its shard
    is held (``flock``), so the new one left it to it. When the old process's last push
    failed and it exited, nobody pushed those acknowledged votes, and the new process's
    revision said none were unpushed although its board counted them. Now the held shard
    is adopted at the first push after it is let go. The Hub is ``LocalHubApi``, failing
    the old process's last commit with the 503 the real client raises."""
    api = LocalHubApi(tmp_path / "hub")
    old, old_log = writer(tmp_path / "data", api)
    settled(old)
    acked = [append(old_log, v) for v in "ab"]  # acknowledged, waiting for a push
    new, new_log = writer(tmp_path / "data", api)  # the restarted process comes up
    settled(new)
    with new.lock:
        assert new.revision()["unpushed"] == 2  # on its board, not in its commit
    api.failures = [unavailable()]
    old.flush(timeout=5)  # SIGTERM: the last push fails...
    old_log.close()  # ... and the old process exits
    acked.append(append(new_log, "tie"))
    new.uploader.trigger().result()
    with new.lock:
        assert new.revision()["unpushed"] == 0
    new.flush(timeout=5)
    counts = raw_vote_ids(api)
    assert {v.vote_id for v in acked} <= set(counts) and set(counts.values()) == {1}


def test_a_neighbour_that_pushed_its_votes_before_exiting_leaves_nothing_to_push_again(tmp_path):
    """The usual restart on one disk: the old process's last push succeeds after the new
    one downloaded the repo. Adopting its shard must not push those votes a second time.
    The Hub is ``LocalHubApi`` (tests/hubfake.py), a folder."""
    api = LocalHubApi(tmp_path / "hub")
    old, old_log = writer(tmp_path / "data", api)
    settled(old)
    acked = [append(old_log, v) for v in "ab"]
    new, _ = writer(tmp_path / "data", api)
    settled(new)
    old.flush(timeout=5)
    old_log.close()
    new.uploader.trigger().result()
    with new.lock:
        assert new.revision()["unpushed"] == 0
    new.flush(timeout=5)
    counts = raw_vote_ids(api)
    assert {v.vote_id for v in acked} == set(counts) and set(counts.values()) == {1}


def earlier_shard(data_dir, tail: bytes) -> Path:
    """An earlier run's shard on a kept disk: rows 0-2, which the repo holds (seeded),
    then ``tail``, which it lacks. No process holds it."""
    path = data_dir / "votes" / "votes-earlier-run.jsonl"
    path.parent.mkdir(parents=True)
    pushed = "".join(json.dumps(row(k)) + "\n" for k in range(3))
    path.write_bytes(pushed.encode() + tail)
    return path


def line(**changes) -> bytes:
    return (json.dumps(row(3) | changes) + "\n").encode()


AHEAD = datetime.now(UTC) + timedelta(days=1)
#: Rows a reader skips today and counts later or elsewhere: dated ahead of this clock (a run
#: whose clock was a day ahead), or of a newer schema (written by a release rolled back
#: since); and a damaged whole line (a hand edit that broke a vote).
UNREAD_TODAY = {
    "ahead": line(ts=format_ts(AHEAD)),
    "newer_schema": line(schema_version=5),
    "damaged": line()[:40] + b"\n",
}


@pytest.mark.parametrize("kind", sorted(UNREAD_TODAY))
def test_an_earlier_file_with_a_row_unread_today_is_not_set_aside(tmp_path, kind):
    """Its read vote ids were all in the repo, so the file was moved to ``.published/``,
    which nothing reads: the rows counted later were lost. The Hub is ``LocalHubApi``."""
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(3)])
    path = earlier_shard(tmp_path / "data", UNREAD_TODAY[kind])
    before = path.read_bytes()
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    assert path.read_bytes() == before  # in place, unchanged
    assert not (path.parent / PUBLISHED_DIR).exists()
    sync.flush(timeout=5)
    log.close()


def test_a_vote_dated_ahead_is_pushed_by_the_first_start_that_reads_it(tmp_path, monkeypatch):
    """A run whose clock was a day ahead acknowledged a vote and died before pushing it. A
    start today skips it (``future_ts``) and must leave its file where a start two days
    later adopts and pushes it, once. The Hub is ``LocalHubApi``; the later start's
    reader clock is faked by handing the cleaning module a ``time`` two days on."""
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(3)])
    earlier_shard(tmp_path / "data", UNREAD_TODAY["ahead"])
    for days in (0, 2):
        later_ns = time.time_ns() + days * 86_400 * 10**9
        monkeypatch.setattr(clean, "time", SimpleNamespace(time_ns=lambda ns=later_ns: ns))
        sync, log = writer(tmp_path / "data", api)
        settled(sync)
        sync.flush(timeout=5)
        log.close()
        counts = raw_vote_ids(api)
        assert counts.get(row(3)["vote_id"], 0) == (1 if days else 0)
    assert set(counts.values()) == {1}


def test_an_earlier_shard_whose_damaged_line_the_repo_holds_is_set_aside(tmp_path):
    """A run pushed its votes and a damaged line (as the damaged file beside the Parquet
    file) and exited. The restart kept its shard in place, replayed beside the repo's copy:
    the board skipped the damaged line twice and each vote once more as a duplicate, while
    its revision named the commit, whose replay skips the line once. The Hub is
    ``LocalHubApi``."""
    api = LocalHubApi(tmp_path / "hub")
    old, old_log = writer(tmp_path / "data", api)
    settled(old)
    append(old_log)
    with old.lock, old_log.path.open("ab") as f:
        f.write(b'{"schema_version":4,"vote_id":"half\n')
    append(old_log, "b")
    old.uploader.trigger().result()
    old.flush(timeout=5)
    old_log.close()
    shard = old_log.path
    new, new_log = writer(tmp_path / "data", api)
    settled(new)
    assert not shard.exists() and (shard.parent / PUBLISHED_DIR / shard.name).is_file()
    space, repo = read_votes([new.votes_dir, new.hub_votes]), repo_votes(api)
    assert dict(space.skipped) == dict(repo.skipped) == {"invalid_json": 1}
    assert len(space) == len(repo) == 2
    new.flush(timeout=5)
    new_log.close()


#: Damaged files in the repo beside an earlier shard ending in a damaged line: its own
#: push's copy of the line; the line in another shard's damaged file; another line.
REPO_DAMAGED = {
    "its_line": ("votes-earlier-run-000002.damaged.jsonl", UNREAD_TODAY["damaged"], True),
    "other_shard": ("votes-other-run-000001.damaged.jsonl", UNREAD_TODAY["damaged"], False),
    "other_line": ("votes-earlier-run-000002.damaged.jsonl", line()[:39] + b"\n", False),
}


@pytest.mark.parametrize("kind", sorted(REPO_DAMAGED))
def test_an_earlier_shard_is_set_aside_only_if_its_push_holds_its_damaged_line(tmp_path, kind):
    """Only the shard's own damaged file holding the line as it is vouches for it: any
    other line keeps the shard in place. The Hub is ``LocalHubApi``."""
    name, held, moves = REPO_DAMAGED[kind]
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(3)])
    (api.repo_dir(REPO) / "data" / name).write_bytes(held)
    path = earlier_shard(tmp_path / "data", UNREAD_TODAY["damaged"])
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    assert path.is_file() != moves
    assert (path.parent / PUBLISHED_DIR / path.name).is_file() == moves
    sync.flush(timeout=5)
    log.close()


def test_an_earlier_file_ending_in_a_torn_line_is_still_set_aside(tmp_path):
    """A torn last line is a write its process died in, never acknowledged: the file's
    votes are all in the repo, so it is set aside as before. The Hub is ``LocalHubApi``."""
    api = LocalHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(3)])
    path = earlier_shard(tmp_path / "data", line()[:40])
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    assert not path.exists() and (path.parent / PUBLISHED_DIR / path.name).is_file()
    sync.flush(timeout=5)
    log.close()
    assert set(raw_vote_ids(api)) == {row(k)["vote_id"] for k in range(3)}
