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
    settled,
    write_votes,
    writer,
)
from huggingface_hub.hf_api import RepoFolder

from arena_core.dataset import shutdown
from arena_core.dataset.hub import HubSync
from arena_core.dataset.repo import compact_repo
from arena_core.dataset.uploader import LineCount, SyncStatus, complete_lines, utc_now
from arena_core.registry import load_registry
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes


@pytest.fixture
def registry(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "conf" / "prompts.yaml").write_text(PROMPTS)
    return load_registry(tmp_path / "conf" / "registry.yaml")


def own_log(sync):
    """The log of the process that ``sync`` pushes, wired as build_service wires it."""
    return VoteLog(sync.votes_dir, lock=sync.lock, shard_name="votes-me.jsonl")


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
    assert "the arena Space" in card and "huggingface.co/spaces" not in card  # none named
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
    # Pushed once, in whichever commit: the start-up's own push may take it before the flush
    # does (which one wins depends on the machine's load).
    adopted = [p for commit in api.commits for p in commit["files"] if "adopted-" in p]
    assert len(adopted) == 1 and adopted[0].startswith("data/adopted-")
    assert sync.status().waiting == 0 and sync.status().pushed_votes == 3


def test_sigterm_flushes_then_hands_over_to_the_previous_handler(tmp_path, monkeypatch):
    def leave(code):  # the handler leaves with os._exit, which would end pytest
        raise SystemExit(code)

    monkeypatch.setattr(shutdown, "exit_now", leave)
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    append(log, "a")
    append(log, "b")
    called = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: called.append((signum, frame)))
    try:
        sync.flush_on_sigterm()
        with pytest.raises(SystemExit) as stop:
            signal.raise_signal(signal.SIGTERM)
        assert stop.value.code == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    ((signum, frame),) = called
    assert signum == signal.SIGTERM and frame is not None  # handed on as received
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
    assert sync.uploader.adopt(read_votes([old, other]), set()) == 4  # nothing published yet
    sync.uploader.trigger().result()
    ids = "\n".join(row(k)["vote_id"] for k in (1, 2, 3, 4))
    name = f"data/adopted-{hashlib.sha256(ids.encode()).hexdigest()[:16]}.parquet"
    assert list(api.commits[-1]["files"]) == [name]
    assert sync.uploader.adopt(read_votes([old]), {row(1)["vote_id"], row(2)["vote_id"]}) == 1
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


class StrictHubApi(LocalHubApi):
    """LocalHubApi holding each call to what the real Hub needs for a dataset repo.

    The real Hub addresses a dataset only with ``repo_type="dataset"`` (without it, the
    same name is a model repo), answers 409 to a second ``create_repo`` unless
    ``exist_ok``, and serves the files of the commit ``revision`` names. LocalHubApi
    ignores these arguments; here a call without them fails as it would on the Hub.
    ``block_commit`` (``block_create``) makes commits (``create_repo``) hang for that many
    seconds, or until ``release`` is set: a test that asserts a caller gave up first sets a
    block far longer than any stall of a busy machine, then releases the call at its end.
    """

    def __init__(self, root):
        super().__init__(root)
        self.calls: list[tuple[str, dict]] = []
        self.block_commit = 0.0
        self.block_create = 0.0
        self.release = threading.Event()
        self.fail_create_after: int | None = None

    def _check(self, name, repo_type, **kwargs):
        self.calls.append((name, {"repo_type": repo_type, **kwargs}))
        if repo_type != "dataset":
            raise HubDownError(f"{name}: 404, no model repo of that name")

    def create_repo(self, repo_id, *, repo_type=None, exist_ok=False, **kwargs):
        self._check("create_repo", repo_type)
        self.release.wait(self.block_create)
        if not exist_ok and self.repo_dir(repo_id).is_dir():
            raise HubDownError("409 Conflict: You already created this dataset repo")
        if self.fail_create_after is not None and len(self.created) >= self.fail_create_after:
            raise HubDownError("503 Service Unavailable (simulated)")
        return super().create_repo(repo_id, repo_type=repo_type, exist_ok=exist_ok, **kwargs)

    def repo_info(self, repo_id, *, repo_type=None, **kwargs):
        self._check("repo_info", repo_type)
        if not self.repo_dir(str(repo_id)).is_dir():
            raise HubDownError(f"404: no dataset {repo_id}")
        return super().repo_info(repo_id, repo_type=repo_type, **kwargs)

    def snapshot_download(self, repo_id, *, repo_type=None, revision=None, **kwargs):
        self._check("snapshot_download", repo_type, revision=revision)
        return super().snapshot_download(repo_id, repo_type=repo_type, **kwargs)

    def create_commit(self, repo_id, operations, *, commit_message, repo_type=None, **kwargs):
        self._check("create_commit", repo_type)
        self.release.wait(self.block_commit)
        return super().create_commit(repo_id, operations, commit_message=commit_message,
                                     repo_type=repo_type, **kwargs)  # fmt: skip

    def list_repo_tree(self, repo_id, path_in_repo=None, *, recursive=False, expand=False,
                       repo_type=None, **kw):  # fmt: skip
        self._check("list_repo_tree", repo_type, path_in_repo=path_in_repo, recursive=recursive,
                    expand=expand, revision=kw.get("revision"))  # fmt: skip
        if not recursive or (path_in_repo is not None and not (expand and path_in_repo == "data")):
            # The download lists every file of the repo; the compaction, those of data/
            # with their last commit.
            raise HubDownError("compaction needs every file of data/ with its last commit")
        # The Hub lists folders too (RepoFolder, without a last commit), before their files.
        base = self.repo_dir(repo_id) / (path_in_repo or "")
        for folder in sorted(p for p in base.rglob("*") if p.is_dir()):
            yield RepoFolder(
                path=folder.relative_to(self.repo_dir(repo_id)).as_posix(), oid="0" * 40
            )
        yield from super().list_repo_tree(repo_id, path_in_repo, recursive=recursive,
                                          expand=expand, repo_type=repo_type, **kw)  # fmt: skip


def test_a_restart_downloads_the_repos_votes_and_card_and_nothing_else(tmp_path, registry):
    api = StrictHubApi(tmp_path / "hub")
    seed_repo(api, [row(k) for k in range(3)])
    repo = api.repo_dir(REPO)
    (repo / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n")
    (repo / "registry").mkdir()
    (repo / "registry" / "registry.yaml").write_text(REGISTRY)
    (repo / "notes.txt").write_text("not ours")
    (tmp_path / "data" / "hub" / "data").mkdir(parents=True)  # left by an earlier run
    downloaded = []
    sync = HubSync(REPO, tmp_path / "data", hf_api=api)
    assert sync.mirror == tmp_path / "data" / "hub"
    assert sync.start(own_log(sync), registry=registry,
                      on_download=lambda: downloaded.append(len(read_votes(sync.hub_votes))))  # fmt: skip
    assert downloaded == [3]
    mirrored = sorted(p.relative_to(sync.mirror).as_posix() for p in sync.mirror.rglob("*")
                      if p.is_file() and ".cache" not in p.parts)  # fmt: skip
    assert mirrored == ["README.md", "data/votes-earlier-000001.parquet"]
    assert sync.connect()  # connected already: nothing more happens
    # The commit is asked for first, and the download names it (a stale local copy never
    # passes for the Hub's).
    assert [name for name, _ in api.calls[:3]] == ["create_repo", "repo_info", "snapshot_download"]
    assert api.calls[2][1]["revision"] == f"{1:040x}"
    # The repo is listed at that commit: the local copy keeps only the files it lists.
    assert api.calls[3][0] == "list_repo_tree" and api.calls[3][1]["revision"] == f"{1:040x}"
    # The card named the arena, and was published with the registry when the Hub answered.
    card = (repo / "README.md").read_text()
    assert "Arenas: `speech`." in card and "license: cc-by-4.0" in card
    assert (repo / "registry" / "prompts.yaml").read_text() == PROMPTS
    sync.flush()


def test_before_start_there_is_nothing_to_connect_and_nothing_waiting(tmp_path):
    sync = HubSync(REPO, tmp_path / "data", hf_api=StrictHubApi(tmp_path / "hub"))
    assert sync.status() == SyncStatus()
    assert sync.every == 5.0 and sync.retry_seconds == 60.0  # push every 5 minutes, retry every 1
    assert HubSync(REPO, tmp_path, hf_api=None, every_minutes=0.5).retry_seconds == 30.0
    assert HubSync(REPO, tmp_path, hf_api=None, retry_seconds=2.5).retry_seconds == 2.5
    with pytest.raises(RuntimeError, match=r"^HubSync.start\(\) names the shard before connect"):
        sync.connect()
    sync.flush()  # nothing started: nothing to do, no error


def test_a_hub_down_at_start_is_retried_in_a_daemon_thread(tmp_path, caplog):
    api = StrictHubApi(tmp_path / "hub")
    api.down = HubDownError("connection refused")
    now = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
    sync = HubSync(REPO, tmp_path / "data", hf_api=api, clock=lambda: now, retry_seconds=0.05)
    log = own_log(sync)
    assert sync.start(log) is False
    (thread,) = [t for t in threading.enumerate() if t.name == "hub-connect"]
    assert thread.daemon  # a Space that stops must not wait for the Hub
    append(log)
    status = sync.status()
    assert status == SyncStatus(waiting=1, last_error="HubDownError: connection refused",
                                unreachable_since=now)  # fmt: skip
    assert f"could not download {REPO}" in caplog.text
    api.down = None
    thread.join(timeout=30)
    assert sync.uploader is not None and sync.status().unreachable_since is None
    sync.flush()
    assert len(repo_votes(api)) == 1


def test_a_scheduler_that_cannot_start_is_reported_and_retried(tmp_path, caplog):
    api = StrictHubApi(tmp_path / "hub")
    api.fail_create_after = 1  # the download works; CommitScheduler's create_repo fails
    sync = HubSync(REPO, tmp_path / "data", hf_api=api, retry_seconds=3600)
    assert not sync.start(own_log(sync))
    assert sync.status().last_error == "HubDownError: 503 Service Unavailable (simulated)"
    assert f"could not start pushing to {REPO}" in caplog.text
    api.fail_create_after = None
    assert sync.connect()
    sync.flush()


def test_a_live_neighbours_shard_is_left_to_it(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    first, first_log = writer(tmp_path / "data", api)
    for vote in "ab":
        append(first_log, vote)
    second, _ = writer(tmp_path / "data", api)  # starts while the first still runs, unpushed
    first.flush()
    second.flush()
    votes = repo_votes(api)
    assert len(votes) == 2 and not votes.skipped  # no copy adopted by the second process


#: How long the Hub hangs in the flush tests (until the test releases it): far longer than
#: any stall of a busy CI machine, so a flush that waited for the Hub is told from one that
#: gave up at its timeout (0.2 s) by :data:`GAVE_UP`, with no race. (A 1 s hang against a
#: 0.8 s bound failed whenever the machine stalled the test for 0.6 s.)
HUNG = 120.0
#: Seconds within which a flush with a 0.2 s timeout has returned, however busy the machine.
GAVE_UP = 30.0


def test_flush_gives_up_at_its_timeout(tmp_path):
    api = StrictHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    append(log)
    api.block_commit = HUNG
    started = time.monotonic()
    sync.flush(timeout=0.2)
    assert time.monotonic() - started < GAVE_UP  # not HUNG: it gave up, at 0.2 s plus a stall
    api.release.set()


def test_flush_gives_up_reaching_a_hanging_hub_at_its_timeout(tmp_path):
    api = StrictHubApi(tmp_path / "hub")
    api.down = HubDownError("refused")
    sync = HubSync(REPO, tmp_path / "data", hf_api=api, retry_seconds=3600)
    sync.start(own_log(sync))
    api.down, api.block_create = None, HUNG  # twice: connect, then the scheduler
    started = time.monotonic()
    sync.flush(timeout=0.2)
    assert time.monotonic() - started < GAVE_UP
    api.release.set()
    while sync.uploader is None:  # the attempt goes on in the background: let it end
        time.sleep(0.05)
    sync.uploader.stop()


def test_compaction_rolls_old_files_of_the_dataset_repo_up_in_one_commit(tmp_path):
    api = StrictHubApi(tmp_path / "hub")
    data = api.repo_dir(REPO) / "data"
    for k in range(2):  # two files of October votes, pushed two hours ago
        write_votes(data / "2026-10" / f"votes-w{k}-000001.parquet",
                    [row(2 * k), row(2 * k + 1)])  # fmt: skip
        api.commit_dates[f"data/2026-10/votes-w{k}-000001.parquet"] = datetime.now(UTC) - timedelta(
            hours=2
        )
    young = compact_repo(api, REPO, tmp_path / "work0", min_age_minutes=180)
    assert young.votes == 0 and not api.commits  # younger than asked: left alone
    report = compact_repo(api, REPO, tmp_path / "work", min_age_minutes=60)
    assert report.votes == 4 and len(report.rolled) == 2
    (commit,) = api.commits
    assert commit["message"] == "Compact 4 votes from 2 files"
    assert commit["repo_type"] == "dataset"
    assert sorted(p for p, v in commit["files"].items() if v is None) == [
        "data/2026-10/votes-w0-000001.parquet",
        "data/2026-10/votes-w1-000001.parquet",
    ]
    assert len(repo_votes(api)) == 4
