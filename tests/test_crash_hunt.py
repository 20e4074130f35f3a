"""Crashes and a hostile disk on the vote path: what a crash hunt found.

The claim under test: a vote the server acknowledged is never lost and never counted
twice. Each test here failed before its fix:

* a shard deleted (or replaced) under a live log was made again by the next vote, but the
  ``flock`` that marks it in use stayed on the old file: a compaction or another process
  starting on the same disk took the live shard for an earlier run's and rolled it up,
  adopted it or set it aside while this process went on writing and pushing it;
* a shard that lost the end of its last line under the log (restored from a torn copy,
  cut short by another tool) glued the next acknowledged vote onto that half line, where
  every replay skipped it as ``invalid_json``;
* an I/O error before the write (``Path.exists`` or ``fstat`` of the shard) came out as a
  bare ``OSError`` to the batch's first caller, and the other votes of the batch got no
  answer at all (``append`` failed on ``None[0]``);
* compaction and the adoption of earlier files deleted (or set aside) their sources once
  the new file's bytes were synced, but not its name: after a power cut the folder could
  hold neither the new file nor the old ones.
"""

import errno
import os
import stat
from pathlib import Path

import pytest
from fakes import batch_of_two

from arena_core.dataset import compact as compact_module
from arena_core.dataset.compact import compact
from arena_core.votes.hold import shard_in_use
from arena_core.votes.log import VoteLog, VoteWriteError
from arena_core.votes.parquet import write_atomically
from arena_core.votes.read import read_votes


def _vote(store: VoteLog, choice: str = "a") -> str:
    return store.append(arena="x", model_a="a", model_b="b", vote=choice).vote_id


def _replace_with_copy(path: Path, data: bytes) -> None:
    """Put ``data`` at ``path`` as a new file (a restore from a copy, an editor's save)."""
    copy = path.with_name("restored.tmp")
    copy.write_bytes(data)
    os.replace(copy, path)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_shard_made_again_under_a_live_log_is_held_again(tmp_path, how):
    """A ``flock`` marks a file, not a name: once the shard was deleted (a clean-up) or
    replaced (a restore), the shard the next vote wrote was not held, and ``compact
    --min-age 0`` (or a neighbour's start-up adoption) took it from the live process."""
    store = VoteLog(tmp_path)
    first = _vote(store)
    if how == "deleted":
        store.path.unlink()
    else:
        _replace_with_copy(store.path, store.path.read_bytes())
    later = _vote(store, "b")
    assert shard_in_use(store.path)
    report = compact(tmp_path, min_age_minutes=0)
    assert report.kept == {store.path.name: "in use by a running process"}
    expected = [first, later] if how == "replaced" else [later]
    assert read_votes(tmp_path).column("vote_id").to_pylist() == expected


def test_a_file_that_is_not_the_shard_is_never_held_for_it(tmp_path):
    """The hold follows the file the log writes, so a log whose shard was replaced lets go
    of the old file (another process may take what it held)."""
    store = VoteLog(tmp_path)
    _vote(store)
    old = tmp_path / "old.jsonl"
    os.link(store.path, old)
    _replace_with_copy(store.path, store.path.read_bytes())
    _vote(store, "b")
    assert shard_in_use(store.path) and not shard_in_use(old)


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_a_vote_after_a_torn_last_line_is_on_a_line_of_its_own(tmp_path, how):
    """Only a failed write of this log's own was ended with a newline before the next vote;
    a shard that lost the end of its last line some other way (cut short in place, or
    restored from a torn copy) got the next acknowledged vote glued onto the half line,
    and every replay skipped both as one ``invalid_json`` row."""
    store = VoteLog(tmp_path)
    first = _vote(store)
    _vote(store, "b")
    torn = store.path.read_bytes()[:-9]
    if how == "truncated":
        os.truncate(store.path, len(torn))
    else:
        _replace_with_copy(store.path, torn)
    later = [_vote(store, choice) for choice in ("tie", "a")]
    votes = read_votes(tmp_path)
    assert votes.column("vote_id").to_pylist() == [first, *later]
    assert dict(votes.skipped) == {"invalid_json": 1}  # the half line, skipped and counted


def _failing_on_the_shard(name: str, shard: Path):
    """os.<name> raising an I/O error for the shard (its path, or a descriptor open on it)."""
    real = getattr(os, name)

    def fake(target, *args, **kwargs):
        where = os.readlink(f"/proc/self/fd/{target}") if isinstance(target, int) else target
        if str(where) == str(shard):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(target, *args, **kwargs)

    return fake


@pytest.mark.parametrize("name", ["stat", "fstat"])
def test_every_vote_of_a_batch_hears_how_an_io_error_ended(tmp_path, monkeypatch, name):
    """Each caller of a batch either has its vote in the log or a refusal that says nothing
    reached it: never a bare error, never no answer."""
    store = VoteLog(tmp_path)
    first = _vote(store)
    fail = _failing_on_the_shard(name, store.path)
    answers = batch_of_two(store, _vote, lambda: monkeypatch.setattr(os, name, fail))
    monkeypatch.undo()
    saved = [a for a in answers.values() if isinstance(a, str)]
    refused = [a for a in answers.values() if not isinstance(a, str)]
    assert all(isinstance(a, VoteWriteError) and a.rolled_back for a in refused), answers
    votes = read_votes(tmp_path)
    assert sorted(votes.column("vote_id").to_pylist()) == sorted([first, *saved])
    assert not votes.skipped


def _record_syncs_and_removals(monkeypatch) -> list[tuple[str, Path]]:
    """Every fsync of a folder, and every file removal by the compaction, in order."""
    events: list[tuple[str, Path]] = []
    real_fsync, real_remove = os.fsync, os.remove

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            events.append(("sync", Path(os.readlink(f"/proc/self/fd/{fd}"))))
        return real_fsync(fd)

    def remove(path, *args, **kwargs):
        events.append(("remove", Path(path)))
        return real_remove(path, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(compact_module.os, "remove", remove)
    return events


def test_compaction_makes_its_monthly_file_durable_before_deleting_a_source(tmp_path,
                                                                              monkeypatch):  # fmt: skip
    """The monthly file's bytes were synced and renamed into place, but neither its folder
    (new, for a new month) nor the rename was synced before the source shard was deleted:
    a power cut then could keep the deletion and lose the rename, and with it the votes."""
    store = VoteLog(tmp_path)
    ids = [_vote(store, choice) for choice in ("a", "b", "tie")]
    store.close()  # an earlier run's shard, let go
    events = _record_syncs_and_removals(monkeypatch)
    report = compact(tmp_path, min_age_minutes=0)
    (part,) = report.written
    assert report.rolled == [store.path] and report.votes == 3
    first_removal = events.index(("remove", store.path))
    synced = {path for kind, path in events[:first_removal] if kind == "sync"}
    assert {part.parent, part.parent.parent, tmp_path} <= synced
    assert read_votes(tmp_path).column("vote_id").to_pylist() == ids


def test_an_atomic_write_is_durable_when_it_returns(tmp_path, monkeypatch):
    """What the adoption of earlier files relies on too: it sets their shards aside once its
    copy of their votes is written (``write_atomically``)."""
    events = _record_syncs_and_removals(monkeypatch)
    path = write_atomically(tmp_path / "new" / "deeper" / "copy.parquet", lambda f: f.write(b"x"))
    synced = {path for kind, path in events if kind == "sync"}
    assert {path.parent, path.parent.parent, tmp_path} <= synced
    assert path.read_bytes() == b"x"
