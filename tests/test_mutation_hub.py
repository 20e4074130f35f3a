"""HubSync and VoteUploader on their own: card publication, adoption, the SIGTERM flush.

The real Hugging Face Hub cannot be reached from the test machine: ``LocalHubApi``
(tests/hubfake.py) keeps the dataset repo in a local folder, records every call and
fails on demand. No speech engine or app is started: a VoteLog writes the votes, as
build_service wires it.
"""

import hashlib
import io
import json
import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from hubfake import (
    PROMPTS,
    REGISTRY,
    REPO,
    HubDownError,
    LocalHubApi,
    repo_votes,
    row,
    seed_repo,
    writer,
)

from arena_core.dataset.uploader import LineCount, complete_lines, utc_now
from arena_core.registry import load_registry
from arena_core.votes.log import VoteLog


@pytest.fixture
def registry(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "conf" / "prompts.yaml").write_text(PROMPTS)
    return load_registry(tmp_path / "conf" / "registry.yaml")


def settled(sync):
    """Wait for CommitScheduler's first tick (it pushes once as its thread starts), so the
    pushes a test triggers are the only ones and their numbering is known."""
    uploader = sync.uploader
    deadline = time.monotonic() + 30
    while not hasattr(uploader, "last_future"):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    uploader.last_future.result()
    return sync


def append(log, vote="a"):
    return log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb", vote=vote)


def test_the_card_and_the_registry_snapshot_are_published_once_and_again_only_when_changed(
    tmp_path, registry
):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api)
    sync.publish_card(registry)
    assert len(api.commits) == 1
    files = api.commits[0]["files"]
    assert sorted(files) == ["README.md", "registry/prompts.yaml", "registry/registry.yaml"]
    assert files["registry/registry.yaml"] == REGISTRY.encode()
    assert files["registry/prompts.yaml"] == PROMPTS.encode()
    card = files["README.md"].decode()
    assert card.startswith("---\n") and REPO in card and "speech" in card
    assert api.commits[0]["message"] == "Update dataset card and registry snapshot"
    # The mirror now holds what the repo holds (a restart downloads it): nothing to send.
    api.snapshot_download(repo_id=REPO, repo_type="dataset", local_dir=sync.mirror)
    sync.publish_card(registry)
    assert len(api.commits) == 1
    (tmp_path / "conf" / "prompts.yaml").write_text(PROMPTS + "- {id: p3, text: Hello.}\n")
    sync.publish_card(load_registry(tmp_path / "conf" / "registry.yaml"))
    assert list(api.commits[1]["files"]) == ["registry/prompts.yaml"]


def test_start_names_the_card_licence_and_space(tmp_path, registry):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api, license_id="cc0-1.0", space_id="org/the-space")
    sync.publish_card(registry)
    card = api.commits[0]["files"]["README.md"].decode()
    assert "license: cc0-1.0" in card and "org/the-space" in card


def test_earlier_local_votes_the_repo_lacks_are_pushed_once(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    seed_repo(api, [row(k) for k in range(3)])
    earlier = VoteLog(tmp_path / "data" / "votes")  # an earlier run whose last votes never left
    earlier.path.write_text("".join(json.dumps(row(k)) + "\n" for k in (1, 2, 3, 4)))
    earlier.close()
    sync, log = writer(tmp_path / "data", api)
    assert sync.status().waiting == 2  # rows 3 and 4; rows 1 and 2 are on the Hub
    append(log)
    assert sync.status().waiting == 3
    sync.flush()
    votes = repo_votes(api)
    assert len(votes) == 6 and not votes.skipped
    adopted = [p for p in api.commits[-1]["files"] if "adopted-" in p]
    assert len(adopted) == 1 and adopted[0].startswith("data/adopted-")
    assert sync.status().waiting == 0 and sync.status().pushed_votes == 3


def test_sigterm_flushes_then_hands_over_to_the_previous_handler(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    append(log, "a")
    append(log, "b")
    called = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: called.append(signum))
    try:
        sync.flush_on_sigterm()
        with pytest.raises(SystemExit) as stop:
            signal.raise_signal(signal.SIGTERM)
        assert stop.value.code == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert called == [signal.SIGTERM]
    assert sorted(repo_votes(api).column("vote").to_pylist()) == ["a", "b"]
    assert sync.uploader is not None and sync._stopped.is_set()


def test_sigterm_handler_only_from_the_main_thread(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api)
    errors = []

    def install():
        try:
            sync.flush_on_sigterm()
        except RuntimeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=install)
    thread.start()
    thread.join()
    assert errors == ["signal handlers can only be installed from the main thread"]
    sync.flush()


def test_pushes_are_numbered_files_of_exactly_the_new_lines(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    stem = log.path.stem
    assert api.created == [{"repo_id": REPO, "repo_type": "dataset", "exist_ok": True}] * 2
    assert sync.uploader.lock is sync.lock  # CommitScheduler's contract: append under .lock
    assert sync.uploader.every == 60
    for vote in "ab":
        append(log, vote)
    sync.uploader.trigger().result()
    append(log, "tie")
    sync.uploader.trigger().result()
    assert sync.uploader.trigger().result() is None  # nothing new: no empty commit
    assert [list(c["files"]) for c in api.commits] == [[f"data/{stem}-000001.parquet"],
                                                      [f"data/{stem}-000002.parquet"]]  # fmt: skip
    assert [c["message"] for c in api.commits] == ["Add 2 votes", "Add 1 votes"]
    assert {c["repo_type"] for c in api.commits} == {"dataset"}
    first = pq.read_table(io.BytesIO(api.commits[0]["files"][f"data/{stem}-000001.parquet"]))
    assert first.column("vote").to_pylist() == ["a", "b"]
    assert sync.status().pushed_votes == 3
    sync.flush()


def test_a_failed_push_is_reported_and_retried_under_the_same_name(tmp_path):
    api, now = LocalHubApi(tmp_path / "hub"), datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
    sync, log = writer(tmp_path / "data", api, clock=lambda: now)
    settled(sync)
    append(log)
    api.fail_next = 1
    with pytest.raises(HubDownError):
        sync.uploader.trigger().result()
    status = sync.status()
    assert status.last_error == "HubDownError: 503 Service Unavailable (simulated)"
    assert status.unreachable_since == now and status.waiting == 1 and status.last_push is None
    append(log, "b")
    sync.uploader.trigger().result()
    assert list(api.commits[0]["files"]) == [f"data/{log.path.stem}-000001.parquet"]
    assert api.commits[0]["message"] == "Add 2 votes"
    status = sync.status()
    assert status.last_error is None and status.unreachable_since is None
    assert status.last_push == now and status.waiting == 0
    sync.flush()


def test_a_damaged_line_in_the_shard_is_skipped_and_the_rest_pushed(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    append(log, "a")
    with sync.lock, log.path.open("ab") as f:
        f.write(b'{"not": "a vote"\n')  # hand-edited, or written by a broken tool
    append(log, "b")
    sync.uploader.trigger().result()
    assert repo_votes(api).column("vote").to_pylist() == ["a", "b"]
    sync.flush()


def test_a_replaced_shard_is_pushed_and_counted_from_its_top(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    append(log, "a")
    append(log, "b")
    sync.uploader.trigger().result()
    assert sync.status().waiting == 0
    # The shard is replaced by a new file (another inode) holding one other vote.
    replacement = log.path.with_name("replacement.tmp")
    replacement.write_text(json.dumps(row(5)) + "\n")
    os.replace(replacement, log.path)
    sync.uploader.trigger().result()
    assert row(5)["vote_id"] in repo_votes(api).column("vote_id").to_pylist()
    assert len(repo_votes(api)) == 3
    assert list(api.commits[-1]["files"]) == [f"data/{log.path.stem}-000002.parquet"]
    assert sync.status().waiting == 0
    sync.flush()


def test_adoption_queues_what_the_hub_lacks_under_a_name_given_by_the_votes(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api)
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(row(k)) + "\n" for k in (1, 2, 3)))
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(row(4)) + "\n")
    assert sync.uploader.adopt([old, other], set()) == 4  # nothing published yet
    sync.uploader.trigger().result()
    ids = "\n".join(row(k)["vote_id"] for k in (1, 2, 3, 4))
    name = f"data/adopted-{hashlib.sha256(ids.encode()).hexdigest()[:16]}.parquet"
    assert list(api.commits[-1]["files"]) == [name]
    assert sync.uploader.adopt([old], {row(1)["vote_id"], row(2)["vote_id"]}) == 1
    sync.flush()


def test_line_counts_follow_a_growing_shard_and_start_over_on_a_new_file(tmp_path):
    shard = tmp_path / "votes-x.jsonl"
    count = LineCount(shard)
    assert count.update() == 0  # not created yet
    shard.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a"')
    assert count.update() == 2  # the third line is not whole yet
    with shard.open("ab") as f:
        f.write(b": 3}\n")
    assert count.update() == 3
    replacement = tmp_path / "new.tmp"
    replacement.write_bytes(b'{"a": 4}\n')
    os.replace(replacement, shard)
    assert count.update() == 1


def test_complete_lines_leave_an_unfinished_line_for_later(tmp_path):
    shard = tmp_path / "s.jsonl"
    assert complete_lines(shard, 0) is None
    shard.write_bytes(b'{"a": 1}\n{"a"')
    assert complete_lines(shard, 0) == (9, b'{"a": 1}\n')
    assert complete_lines(shard, 9) is None


def test_status_times_are_utc():
    assert utc_now().utcoffset() == timedelta(0)
