"""A shard changed under the live uploader: replaced by a copy, cut short, deleted.

The claim under test: a vote the server acknowledged is in the published dataset exactly
once. ``datasets.load_dataset`` on the repo counts every Parquet row, with no
deduplication by ``vote_id``, and the dataset card promises repeats only for a moment
during a compaction; so a vote pushed twice is counted twice by every user of the
dataset for good (the Space's own replay keeps the first row but counts a skipped
``duplicate_vote_id`` that the Space's board never counted).

The uploader pushes a shard's new bytes from the offset it pushed up to. Before the fix:

* a shard replaced by a copy of itself (a restore from a backup, an editor's save through
  ``os.replace``: a new inode) was pushed again from its top under the next file name;
* a shard cut short in place below that offset pushed nothing until it grew past the old
  offset, then pushed from the middle of a line: the votes written in between never
  reached the Hub, and the vote at the old offset went as a damaged half line;
* a shard deleted before its last votes were pushed lost them: the uploader went on to
  the file the next vote made, and the deleted file's votes (acknowledged, and still
  readable through a descriptor) were never pushed.

The real Hugging Face Hub cannot be reached from the test machine: the Hub is
``LocalHubApi`` (tests/hubfake.py), injected as ``hf_api``; pushes are driven by hand.
"""

import os

import pytest
from hubfake import Landed, LocalHubApi, raw_vote_ids, repo_votes, settled, timed_out, writer

from arena_core.votes.hold import shard_in_use
from arena_core.votes.read import read_votes


def _vote(log, choice="a") -> str:
    return log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb",
                      vote=choice).vote_id  # fmt: skip


def _replace(path, data: bytes) -> None:
    """Put ``data`` at ``path`` as a new file, as a restore or an editor's save does."""
    copy = path.with_name(".restored.tmp")
    copy.write_bytes(data)
    os.replace(copy, path)


def _pushing(tmp_path):
    """A process's sync and log whose pushes happen only when a test asks."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync).uploader.stop()
    return api, sync, log


def _published_once(api, acked) -> None:
    """Every acknowledged vote is in the repo's Parquet files exactly once, nothing else is,
    and no damaged file was pushed (no vote went as a half line)."""
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    assert not list((api.repo_dir("org/arena-votes") / "data").glob("*.damaged.jsonl"))


@pytest.mark.parametrize("copy", ["whole", "older backup"])
def test_a_shard_replaced_by_a_copy_of_itself_is_not_pushed_again(tmp_path, copy):
    """A restore of the shard from a copy (the whole file, or a backup taken before the last
    vote) makes a new file with the same lines: it was pushed again from its top under the
    next name, and ``load_dataset`` counted those votes twice."""
    datasets = pytest.importorskip("datasets")
    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log), _vote(log, "b")]
    backup = log.path.read_bytes()
    acked.append(_vote(log, "tie"))
    sync.uploader.push_to_hub()
    _replace(log.path, log.path.read_bytes() if copy == "whole" else backup)
    acked.append(_vote(log, "both_bad"))
    if copy == "whole":  # an older copy is counted right once pushed (see the cursor)
        assert sync.status().waiting == 1
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    files = sorted(str(p) for p in (api.repo_dir("org/arena-votes") / "data").glob("*.parquet"))
    loaded = datasets.load_dataset("parquet", data_files=files, split="train",
                                   cache_dir=str(tmp_path / "cache"))  # fmt: skip
    assert sorted(loaded["vote_id"]) == sorted(acked)
    assert not repo_votes(api).skipped  # no duplicate_vote_id the Space's board never had
    sync.flush()


def test_a_retried_push_after_a_replacement_rewrites_the_file_that_landed(tmp_path):
    """The push after a replacement keeps the uploader's rule: a push whose answer was lost
    is retried under the same name with the same votes and newer ones."""
    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log)]
    sync.uploader.push_to_hub()
    _replace(log.path, log.path.read_bytes())
    acked.append(_vote(log, "b"))
    api.failures = [Landed(timed_out())]
    with pytest.raises(Exception, match="timed out"):
        sync.uploader.push_to_hub()
    acked.append(_vote(log, "tie"))
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    assert len(list((api.repo_dir("org/arena-votes") / "data").glob("*.parquet"))) == 2
    sync.flush()


@pytest.mark.parametrize("cut", ["at a line end", "mid-line"])
def test_a_shard_cut_short_in_place_pushes_its_next_votes_whole(tmp_path, cut):
    """A shard cut short in place (same inode, ``truncate``) below the pushed offset: the
    next votes were not pushed until the file grew past that offset, and then the push
    started in the middle of a line, losing the votes before it. The votes already pushed
    stay in the dataset; the ones written after the cut are pushed, each once."""
    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log, c) for c in ("a", "b", "tie")]
    sync.uploader.push_to_hub()
    first_line = log.path.read_bytes().index(b"\n") + 1
    os.truncate(log.path, first_line if cut == "at a line end" else first_line + 20)
    later = [_vote(log, "both_bad")]
    sync.uploader.push_to_hub()
    assert set(raw_vote_ids(api)) == {*acked, *later}  # not held back until the file regrows
    while log.path.stat().st_size < 3 * first_line:  # past the old offset, mid-line
        later.append(_vote(log, "a"))
    sync.uploader.push_to_hub()
    assert raw_vote_ids(api) == dict.fromkeys(acked + later, 1)
    votes = repo_votes(api)
    assert sorted(votes.column("vote_id").to_pylist()) == sorted(acked + later)
    # The cut half line is a damaged row in the shard: the repo holds it too, nothing else.
    assert dict(votes.skipped) == ({} if cut == "at a line end" else {"invalid_json": 1})
    sync.flush()


def test_a_shard_deleted_under_the_live_log_loses_no_vote_and_doubles_none(tmp_path):
    """A shard deleted (an operator's clean-up) with votes not yet pushed, then made again
    by the next vote. The votes pushed before stay in the dataset (pushed files are never
    rewritten); the new file's votes are pushed once; and the deleted file's last votes,
    acknowledged but not pushed yet, were lost: the uploader went straight to the new
    file. It reads them through the descriptor it keeps on the file it pushes."""
    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log)]
    sync.uploader.push_to_hub()
    acked.append(_vote(log, "b"))  # acknowledged, not pushed yet
    log.path.unlink()
    acked += [_vote(log, "tie"), _vote(log, "a")]
    sync.uploader.push_to_hub()
    sync.uploader.push_to_hub()  # nothing new: no file
    acked.append(_vote(log, "b"))
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    assert len(list((api.repo_dir("org/arena-votes") / "data").glob("*.parquet"))) == 3
    sync.flush()


def test_a_shard_deleted_and_not_made_again_still_has_its_last_votes_pushed(tmp_path):
    """The final flush of a process whose shard was deleted after its last vote pushes
    that vote: the server acknowledged it, and the Hub is the Space's only durable store."""
    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log)]
    sync.uploader.push_to_hub()
    acked.append(_vote(log, "b"))
    log.path.unlink()
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    sync.flush()


def test_a_damaged_line_of_a_shard_replaced_by_its_copy_is_pushed_once(tmp_path):
    """A damaged line (a hand edit, a broken tool) goes to the Hub as it is, so a replay of
    the repo skips and counts it as the Space's replay of its shard does: once. Pushed again
    with the copy, every replay of the repo counted it twice."""
    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log)]
    with sync.lock, log.path.open("ab") as f:
        f.write(b'{"not": "a vote"\n')
    acked.append(_vote(log, "b"))
    sync.uploader.push_to_hub()
    _replace(log.path, log.path.read_bytes())
    acked.append(_vote(log, "tie"))
    sync.uploader.push_to_hub()
    assert raw_vote_ids(api) == dict.fromkeys(acked, 1)
    assert dict(repo_votes(api).skipped) == {"invalid_json": 1}
    sync.flush()


def test_the_vote_folder_deleted_under_the_live_log_takes_votes_again(tmp_path):
    """The whole vote folder deleted while the Space runs (a clean-up of the data folder):
    every later vote was refused ("could not open the vote shard") until a restart. The
    next vote now makes the folder again, with a log line saying so; the deleted shard's
    last votes, acknowledged but not pushed, are still pushed, and none twice."""
    import shutil

    api, sync, log = _pushing(tmp_path)
    acked = [_vote(log)]
    sync.uploader.push_to_hub()
    acked.append(_vote(log, "b"))  # acknowledged, not pushed yet
    shutil.rmtree(log.folder)
    acked += [_vote(log, "tie"), _vote(log, "a")]
    assert log.path.exists() and shard_in_use(log.path)
    assert read_votes(log.folder).column("vote_id").to_pylist() == acked[2:]
    sync.uploader.push_to_hub()
    _published_once(api, acked)
    sync.flush()
