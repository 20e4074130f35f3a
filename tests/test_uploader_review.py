"""A deleted shard and failing pushes, found by the review of the shard cursor.

The claim under test is the one of tests/test_uploader_hunt.py: a vote the server
acknowledged is in the published dataset exactly once. The cursor kept a descriptor only on
a file a push from it had succeeded from, and closed what a failed push had opened, so:

* votes written, the shard deleted, one more vote (the log made a new file), then the
  first push: the deleted file's votes were never pushed (nobody had it open);
* a vote pushed, the shard deleted, a vote in the new file, a failed push, the shard
  deleted again, a vote: the second file's vote was lost (its descriptor went with the
  failed push).

Now the log hands the descriptor of a file it stops writing (its name leads to another
file) to whoever follows the shard, and the cursor keeps every file whose lines have not
all landed. With nobody following (no Hub configured), the log closes such files at once.

A failed push also left a descriptor open when it failed in a way the uploader did not
catch (its files could not be made, or the commit raised a BaseException): a process whose
pushes failed for hours ran out of descriptors, and then of votes.

The real Hugging Face Hub cannot be reached from the test machine: the Hub is
``LocalHubApi`` (tests/hubfake.py), injected as ``hf_api``; pushes are driven by hand.
"""

import time

import pytest
from fakes import open_files
from hubfake import (
    LocalHubApi,
    pushing,
    raw_vote_ids,
    settled,
    speech_vote,
    unavailable,
    writer,
)

from arena_core.votes.log import MAX_RETIRED, VoteLog


def _published_once(api, acked) -> None:
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)


def _open_fds(folder) -> int:
    """Descriptors of files under ``folder``, the vote folder (its shards, deleted or not).
    Counted over the whole process (32 against 31), then over the test's folder (3 against
    2, in CI), it failed now and then: a Parquet file of the Hub stand-in that a check had
    read stays open until the garbage collector frees its reader.
    """
    return sum(t.startswith(f"{folder}/") for t in open_files())


def _settled_fds(folder, at_most: int) -> int:
    """:func:`_open_fds` once it is at most ``at_most``, or after 5 s: a descriptor closed
    by another thread (a push's executor, the garbage collector) may lag the last step."""
    deadline = time.monotonic() + 5
    while (count := _open_fds(folder)) > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def test_votes_of_a_shard_deleted_before_its_first_push_are_pushed(tmp_path):
    """The uploader never had the first file open: the log hands it over when it makes the
    next one, and its votes are pushed from it."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log), speech_vote(log, "b")]
    log.path.unlink()
    acked.append(speech_vote(log, "tie"))
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    sync.flush()


def test_a_shard_deleted_again_after_a_failed_push_loses_nothing(tmp_path):
    """The file a failed push read is kept until its votes land, deleted or not."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log)]
    sync.uploader.push_to_hub()
    log.path.unlink()
    acked.append(speech_vote(log, "b"))
    api.fail_next = 1
    with pytest.raises(Exception, match="503"):
        sync.uploader.push_to_hub()
    log.path.unlink()
    acked.append(speech_vote(log, "tie"))
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    sync.flush()


@pytest.mark.parametrize("deleted", ["after each vote", "before each vote"])
def test_a_shard_deleted_while_the_hub_is_down_for_several_pushes(tmp_path, deleted):
    """Hours of a Hub outage, the shard deleted between votes: every vote is pushed once
    the Hub answers, none twice, and the files are let go once their votes landed."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log)]
    sync.uploader.push_to_hub()
    fds = _open_fds(log.folder)
    for choice in ("a", "b", "tie", "both_bad", "a"):
        if deleted == "before each vote":
            log.path.unlink()
        acked.append(speech_vote(log, choice))
        if deleted == "after each vote":
            log.path.unlink()
        api.fail_next = 1
        with pytest.raises(Exception, match="503"):
            sync.uploader.push_to_hub()
    assert sync.status().waiting <= 1  # what the current file holds: the count is per file
    sync.uploader.push_to_hub()
    sync.uploader.push_to_hub()  # nothing new: no file
    _published_once(api, acked)
    assert len(list((api.repo_dir("org/arena-votes") / "data").glob("*.parquet"))) == 2
    assert _settled_fds(log.folder, fds) <= fds, open_files()
    sync.flush()


def test_a_shard_deleted_before_the_hub_first_answered_is_pushed_whole(tmp_path):
    """Votes go to the shard while the Hub is down at start-up; the shard is deleted then:
    the sync follows the shard from the start, so the deleted file is pushed once the Hub
    answers."""
    api = LocalHubApi(tmp_path / "hub")
    api.down = unavailable()
    sync, log = writer(tmp_path / "data", api, retry_seconds=3600)
    assert sync.uploader is None
    acked = [speech_vote(log), speech_vote(log, "b")]
    log.path.unlink()
    acked.append(speech_vote(log, "tie"))
    api.down = None
    assert sync.connect()
    settled(sync).uploader.stop()
    sync.uploader.push_to_hub()  # the first tick may have pushed already
    _published_once(api, acked)
    sync.flush()


def test_a_log_nobody_follows_keeps_no_descriptor_of_its_deleted_files(tmp_path):
    """With no Hub configured nobody takes the files the log stops writing: it closes them,
    so a shard deleted again and again costs no descriptor."""
    log = VoteLog(tmp_path / "votes")
    speech_vote(log)
    fds = _open_fds(log.folder)
    for _ in range(30):
        log.path.unlink()
        speech_vote(log)
    assert _settled_fds(log.folder, fds) <= fds, open_files()
    log.close()


def test_a_followed_log_whose_hub_never_answers_keeps_few_descriptors(tmp_path):
    """A Hub down for good while the shard is deleted again and again: the log keeps the
    files for the uploader to come, but not without bound (a process out of descriptors
    takes no vote at all)."""
    api = LocalHubApi(tmp_path / "hub")
    api.down = unavailable()
    sync, log = writer(tmp_path / "data", api, retry_seconds=3600)
    speech_vote(log)
    fds = _open_fds(log.folder)
    for _ in range(MAX_RETIRED + 20):
        log.path.unlink()
        speech_vote(log)
    assert _settled_fds(log.folder, fds + MAX_RETIRED) <= fds + MAX_RETIRED, open_files()
    sync.flush(timeout=0.1)
    log.close()


class _Stop(BaseException):
    """Not an Exception: what a KeyboardInterrupt or a SystemExit is to the uploader."""


@pytest.mark.parametrize("failure", ["files", "commit", "commit BaseException"])
def test_failing_pushes_leak_no_descriptor(tmp_path, monkeypatch, failure):
    """A push that fails at any step, again and again: the descriptors open stay as many."""
    api, sync, log = pushing(tmp_path)
    speech_vote(log)
    uploader = sync.uploader

    def fail(*args, **kwargs):
        raise _Stop("stop") if failure == "commit BaseException" else RuntimeError("boom")

    if failure == "files":
        monkeypatch.setattr(uploader, "_operations", fail)
    else:
        monkeypatch.setattr(api, "create_commit", fail)
    counts = []
    for _ in range(6):
        with pytest.raises((RuntimeError, _Stop)):
            uploader.push_to_hub()
        counts.append(_open_fds(log.folder))
    assert counts[-1] <= counts[0], counts
    monkeypatch.undo()
    uploader.push_to_hub()
    assert len(raw_vote_ids(api)) == 1
    sync.flush()
