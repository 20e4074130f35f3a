"""Gaps a hand-run mutation spot-check of the vote push and the vote store found.

The code that pushes votes to the Hub and keeps them on disk changed a lot (the shard
cursor, ``arena_core/dataset/cursor.py``; the flock helpers, ``arena_core/votes/hold.py``;
the files a followed log hands over, ``VoteLog.follow``/``take_retired``/``MAX_RETIRED``
in ``arena_core/votes/log.py``; ``arena_core/dataset/uploader.py``), and its mutation tests
were not re-run. About sixty mutants were made by hand, one at a time (a condition
dropped or flipped, a re-hold, a close or a release skipped, two statements swapped), and
the tests of these modules run on each. Each test here failed on a mutant the existing
tests let through, and says in its docstring which change it catches. What each guards is
something a user sees: a vote lost or counted twice, a damaged line counted otherwise on
the Hub than on the Space, a wrong "waiting" count on the page, a descriptor (and a
deleted file's disk space) kept, a file left locked.

The real Hugging Face Hub cannot be reached from the test machine: the Hub is
``LocalHubApi`` (tests/hubfake.py), injected as ``hf_api``; pushes are driven by hand.
"""

import json
import os
import time
from pathlib import Path

import pytest
from fakes import batch_of_two, open_files
from hubfake import (
    LocalHubApi,
    pushing,
    raw_vote_ids,
    repo_votes,
    row,
    settled,
    speech_vote,
    unavailable,
    writer,
)

from arena_core.dataset.compact import compact
from arena_core.votes import log as log_module
from arena_core.votes.hold import shard_in_use
from arena_core.votes.log import MAX_RETIRED, VoteLog, VoteWriteError
from arena_core.votes.read import read_votes

#: A line no replay reads as a vote (skipped and counted as ``invalid_json``).
DAMAGED = b'{"not": "a vote"\n'


def _replace(path: Path, data: bytes) -> None:
    """Put ``data`` at ``path`` as a new file, as a restore or an editor's save does."""
    copy = path.with_name(".restored.tmp")
    copy.write_bytes(data)
    os.replace(copy, path)


def _append(sync, path: Path, data: bytes) -> None:
    with sync.lock, path.open("ab") as f:
        f.write(data)


def _open_under(folder: Path) -> list[str]:
    return [t for t in open_files() if t.startswith(f"{folder}/")]


def test_a_shard_with_a_damaged_line_replaced_by_its_copy_before_any_push(tmp_path):
    """The log hands over the replaced file; the cursor reads it and the copy from their
    tops in one push. Votes the first part held were pushed again from the second (mutant:
    the ids of a part not added to those left out of later parts), and its damaged line
    went twice (mutant: a push's own damaged lines not left out of its later parts)."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log)]
    _append(sync, log.path, DAMAGED)
    acked.append(speech_vote(log, "b"))
    _replace(log.path, log.path.read_bytes())
    acked.append(speech_vote(log, "tie"))
    sync.uploader.push_to_hub()
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    assert dict(read_votes(sync.votes_dir).skipped) == {"invalid_json": 1}
    assert dict(repo_votes(api).skipped) == {"invalid_json": 1}
    sync.flush()


def test_a_marked_line_first_in_a_later_push_is_skipped_on_the_hub_too(tmp_path):
    """A readable vote behind a byte-order mark, mid-shard, right after what was pushed: the
    Space's replay skips it (a mark is dropped only at a file's start). Mutant: the mark
    dropped at the start of every push, and the Hub counted a vote the Space never did."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log)]
    sync.uploader.push_to_hub()
    _append(sync, log.path, b"\xef\xbb\xbf" + json.dumps(row(7)).encode() + b"\n")
    acked.append(speech_vote(log, "b"))
    sync.uploader.push_to_hub()
    local, hub = read_votes(sync.votes_dir), repo_votes(api)
    assert dict(local.skipped) == {"invalid_json": 1} and len(local) == 2
    assert dict(hub.skipped) == dict(local.skipped)
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    sync.flush()


def test_the_same_damaged_line_twice_in_an_append_only_shard_counts_twice_on_the_hub(tmp_path):
    """Two torn writes that left the same bytes, pushed by two pushes: the Space's replay
    skips and counts both. Mutant (a file that was not cut short taken for one that was,
    read from its top): the second was left out as pushed before, and the Hub's replay
    counted one."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log)]
    _append(sync, log.path, DAMAGED)
    acked.append(speech_vote(log, "b"))
    sync.uploader.push_to_hub()
    _append(sync, log.path, DAMAGED)
    acked.append(speech_vote(log, "tie"))
    sync.uploader.push_to_hub()
    assert dict(read_votes(sync.votes_dir).skipped) == {"invalid_json": 2}
    assert dict(repo_votes(api).skipped) == {"invalid_json": 2}
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    sync.flush()


def test_the_waiting_count_after_a_shard_is_cut_short(tmp_path):
    """The page's "waiting" count. Cut short below what was pushed, the shard has fewer
    lines than were pushed: mutant, -2 votes waiting. Once the file was pushed again from
    its top, its lines were added to those pushed before (mutant), and the next vote was
    not counted as waiting."""
    _, sync, log = pushing(tmp_path)
    for choice in ("a", "b", "tie"):
        speech_vote(log, choice)
    sync.uploader.push_to_hub()
    os.truncate(log.path, log.path.read_bytes().index(b"\n") + 1)
    assert sync.status().waiting == 0
    speech_vote(log, "both_bad")
    sync.uploader.push_to_hub()
    assert sync.status().waiting == 0
    speech_vote(log)
    assert sync.status().waiting == 1
    sync.flush()


def test_the_waiting_count_after_a_restore_of_an_older_backup(tmp_path):
    """A restore of an older backup brings back only votes pushed before: the push finds
    nothing to send, and must still move past them (mutant: it did not), or the next vote
    was not counted as waiting."""
    api, sync, log = pushing(tmp_path)
    speech_vote(log)
    backup = log.path.read_bytes()
    speech_vote(log, "b")
    sync.uploader.push_to_hub()
    _replace(log.path, backup)
    commits = len(api.commits)
    sync.uploader.push_to_hub()
    assert len(api.commits) == commits  # nothing new: no file
    speech_vote(log, "tie")
    assert sync.status().waiting == 1
    sync.flush()


def test_a_deleted_shard_is_let_go_by_the_push_that_lands_its_votes(tmp_path):
    """Once a deleted file's last votes landed, nothing holds it open: its disk space is
    freed. Mutant: the push did not let it go (the next push found it empty and did)."""
    api, sync, log = pushing(tmp_path)
    acked = [speech_vote(log)]
    sync.uploader.push_to_hub()
    acked.append(speech_vote(log, "b"))
    log.path.unlink()
    acked.append(speech_vote(log, "tie"))
    sync.uploader.push_to_hub()
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    assert not [t for t in _open_under(sync.votes_dir) if t.endswith(" (deleted)")]
    sync.flush()


def test_a_followed_log_whose_hub_never_answered_keeps_the_newest_files(tmp_path):
    """Past MAX_RETIRED files waiting for the Hub the oldest is closed, its votes left on the
    disk only: those of the newest files are pushed once the Hub answers. Mutant: the file
    just retired was closed instead, losing the latest votes."""
    api = LocalHubApi(tmp_path / "hub")
    api.down = unavailable()
    sync, log = writer(tmp_path / "data", api, retry_seconds=3600)
    acked = [speech_vote(log)]
    for _ in range(MAX_RETIRED + 2):
        log.path.unlink()
        acked.append(speech_vote(log, "b"))
    api.down = None
    assert sync.connect()
    settled(sync).uploader.stop()
    sync.uploader.push_to_hub()
    assert raw_vote_ids(api) == dict.fromkeys(acked[-(MAX_RETIRED + 1) :], 1)
    sync.flush()
    log.close()


def test_closing_a_followed_log_closes_the_files_nobody_took(tmp_path):
    """A log whose Hub never answered keeps the files it stopped writing for the uploader;
    closed, it lets them go (mutant: they stayed open)."""
    api = LocalHubApi(tmp_path / "hub")
    api.down = unavailable()
    sync, log = writer(tmp_path / "data", api, retry_seconds=3600)
    speech_vote(log)
    for _ in range(3):
        log.path.unlink()
        speech_vote(log)
    sync.flush(timeout=0.1)
    log.close()
    assert _open_under(sync.votes_dir) == []


def test_a_vote_in_a_shard_replaced_under_the_log_makes_its_entry_durable(tmp_path, monkeypatch):
    """A shard replaced by a copy (a restore) is a new file whose name the folder may not
    have on disk yet: the next vote syncs the folder before it is acknowledged. Mutant: it
    did not (the file existed, so the log took its entry for synced), and a power cut could
    bring back the old file without the acknowledged vote."""
    store = VoteLog(tmp_path)
    speech_vote(store)
    _replace(store.path, store.path.read_bytes())
    synced = []
    monkeypatch.setattr(log_module, "sync_folder", synced.append)
    speech_vote(store, "b")
    assert synced == [store.folder]
    store.close()


def test_a_second_writer_refused_again_and_again_leaks_no_descriptor(tmp_path):
    """A process started on a live shard's name is refused at each vote. Mutant: each
    refusal left the descriptor of the failed lock open, until no vote could be taken."""
    first = VoteLog(tmp_path, shard_name="votes-one.jsonl")
    speech_vote(first)
    second = VoteLog(tmp_path, shard_name="votes-one.jsonl")
    with pytest.raises(VoteWriteError):
        speech_vote(second)
    fds = len(_open_under(tmp_path))  # the test's own files: other threads' come and go
    for _ in range(20):
        with pytest.raises(VoteWriteError):
            speech_vote(second)
    assert len(_open_under(tmp_path)) <= fds
    first.close()
    second.close()


def test_a_second_writer_never_cuts_a_vote_the_live_writer_made(tmp_path, monkeypatch):
    """A second writer's refused vote cut the shard back to the length it had read before
    it tried the lock, taking with it the vote the live process wrote meanwhile,
    acknowledged: a bug, found writing this test for a mutant (the lock tried after the
    write), fixed by taking the lock before the length is read."""
    first = VoteLog(tmp_path, shard_name="votes-one.jsonl")
    acked = [speech_vote(first)]
    second = VoteLog(tmp_path, shard_name="votes-one.jsonl")
    real = log_module.hold_file

    def hold_file(path):
        if len(acked) == 1:  # the live process votes while the second one writes
            acked.append(speech_vote(first, "b"))
        return real(path)

    monkeypatch.setattr(log_module, "hold_file", hold_file)
    with pytest.raises(VoteWriteError):
        speech_vote(second, "tie")
    assert read_votes(tmp_path).column("vote_id").to_pylist() == acked
    first.close()
    second.close()


def test_every_vote_of_a_batch_hears_of_an_unexpected_failure(tmp_path, monkeypatch):
    """A failure that is not an OSError while a batch is written: every caller hears of it
    as a refused vote. Mutant (only VoteWriteError caught): the leader got the bare error
    and the other caller no answer at all."""
    store = VoteLog(tmp_path)
    speech_vote(store)

    def fsync(fd):
        raise RuntimeError("not an OSError")

    answers = batch_of_two(store, speech_vote, lambda: monkeypatch.setattr(os, "fsync", fsync))
    monkeypatch.undo()
    assert len(answers) == 2
    assert all(isinstance(a, VoteWriteError) for a in answers.values()), answers
    store.close()


def _earlier_file(tmp_path) -> Path:
    old = tmp_path / "earlier" / "old.jsonl"
    old.parent.mkdir()
    old.write_text(json.dumps(row(1)) + "\n")
    return old


def test_an_adoption_queued_during_a_push_is_pushed_and_its_file_let_go(tmp_path, monkeypatch):
    """Earlier files are adopted from another thread than the scheduler's (the start-up
    connects while the first push may run). Mutants: the push that landed dropped the
    adoption queued meanwhile (its votes never pushed), or its file's lock (the file stayed
    in use, and no other process ever adopted it), or its count in the commit's record."""
    api, sync, log = pushing(tmp_path)
    old = _earlier_file(tmp_path)
    acked = [speech_vote(log)]
    real = api.create_commit

    def create_commit(*args, **kwargs):
        if not shard_in_use(old):  # once: another thread adopts while the commit runs
            sync.uploader.adopt(read_votes([old]), set(), hold=[old])
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "create_commit", create_commit)
    sync.uploader.push_to_hub()
    assert shard_in_use(old)  # its votes are not on the Hub yet
    with sync.lock:  # the board's provenance counts them as not pushed
        assert sync.revision()["unpushed"] == 1
    sync.uploader.push_to_hub()
    assert raw_vote_ids(api) == dict.fromkeys([*acked, row(1)["vote_id"]], 1)
    assert not shard_in_use(old)
    sync.flush()


def test_stopping_lets_go_of_the_files_of_adoptions_not_pushed(tmp_path):
    """A process that stops with adopted votes not pushed lets go of their files, so the
    next process adopts them (mutant: they stayed locked)."""
    _, sync, _ = pushing(tmp_path)
    old = _earlier_file(tmp_path)
    sync.uploader.adopt(read_votes([old]), set(), hold=[old])
    assert shard_in_use(old)
    sync.uploader.stop()
    assert not shard_in_use(old)


def test_a_shard_renamed_in_its_folder_stays_held_until_its_votes_landed(tmp_path):
    """The shard renamed while the Hub is down (``mv`` by hand, a tool's rotation): the log
    writes a new shard and hands the old file to the uploader. It was unlocked on the way,
    so under its new name it looked like any earlier file: a compaction rolled it up (and a
    neighbour's start-up could adopt it) while this process still pushed its votes, and
    those votes were in the dataset twice. It stays held until its votes landed, then is
    let go like any other file (found by the mutation spot-check, H4/L8). Once let go, this
    process adopted it as a neighbour's file and pushed its votes a second time (the old
    code too): it now counts its own pushes as published."""
    api = LocalHubApi(tmp_path / "hub")
    api.down = unavailable()
    sync, log = writer(tmp_path / "data", api, retry_seconds=3600)
    acked = [speech_vote(log), speech_vote(log, "b")]
    renamed = log.path.with_name("votes-renamed.jsonl")
    os.rename(log.path, renamed)
    acked.append(speech_vote(log, "tie"))  # a new shard: the renamed file is handed over
    assert shard_in_use(renamed)
    os.utime(renamed, (time.time() - 7200,) * 2)
    assert compact(sync.votes_dir, min_age_minutes=60).kept.get(renamed.name) == (
        "in use by a running process"
    )
    api.down = None
    assert sync.connect()
    settled(sync).uploader.stop()
    sync.uploader.push_to_hub()
    assert not shard_in_use(renamed)  # its votes landed: let go
    sync.uploader.push_to_hub()  # adopts the file let go: nothing of it is pushed again
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    sync.flush()
    log.close()
