"""Votes on the Hub, tested through CommitScheduler's ``hf_api`` injection point.

The real Hugging Face Hub cannot be reached from the test machine: ``LocalHubApi``
(tests/hubfake.py) keeps the dataset repo in a local folder laid out exactly like the
real one and records every ``create_repo`` and ``create_commit``.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fakes import build_steady_service
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
    writer,
)
from hubhistory import HistoryHubApi
from huggingface_hub import CommitOperationDelete

from arena_core import cli
from arena_core.dataset.earlier import PUBLISHED_DIR
from arena_core.dataset.repo import compact_repo
from arena_core.integrity.identity import voter_hash
from arena_core.snapshots import source
from arena_core.snapshots.revision import service_revisions
from arena_core.snapshots.source import board_part
from arena_core.space.config import Settings
from arena_core.space.service import ArenaError
from arena_core.space.startup import build_service
from arena_core.votes.log import LogClosedError, VoteLog
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = LocalHubApi(tmp_path / "hub")
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data", voter_salt="s",
                        dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip
    return settings, api


def start(settings, api):
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")}, hf_api=api)
    service.load()
    return service


def battle_and_vote(service, choice="a", voter="v", prompt=None):
    view = service.new_battle("speech", prompt)
    return service.vote(view.handle, choice, voter=voter)


def test_startup_merges_the_hub_with_unpushed_local_shards(setup):
    settings, api = setup
    seed_repo(api, [row(k) for k in range(5)])
    earlier = VoteLog(settings.votes_dir)  # a previous run on a machine that kept its disk
    lines = [json.dumps(row(k)) for k in (3, 4)] + [json.dumps(row(9, vote="b"))]
    earlier.path.write_text("\n".join(lines) + "\n")
    service = start(settings, api)
    assert api.created and all(  # once before the download, once in CommitScheduler's constructor
        c == {"repo_id": REPO, "repo_type": "dataset", "exist_ok": True} for c in api.created
    )
    assert service.board("speech").votes_used == 6  # 5 on the Hub + 1 only local, no duplicates
    service.sync.uploader.trigger().result()
    votes = repo_votes(api)
    assert len(votes) == 6 and not votes.skipped  # the local-only vote was pushed, once
    card = (api.repo_dir(REPO) / "README.md").read_text()
    assert "dataset_info" in card and (api.repo_dir(REPO) / "registry" / "prompts.yaml").is_file()
    service.sync.flush()


def test_votes_are_pushed_periodically_as_new_files(setup):
    settings, api = setup
    fast = Settings(**{**settings.__dict__, "push_minutes": 0.01})  # every 0.6 s
    service = start(fast, api)
    for choice in ("a", "b", "tie"):
        battle_and_vote(service, choice)
    deadline = time.monotonic() + 30
    data = api.repo_dir(REPO) / "data"
    while time.monotonic() < deadline and not (data.is_dir() and len(repo_votes(api)) == 3):
        time.sleep(0.2)
    assert len(repo_votes(api)) == 3
    status = service.sync.status()
    assert status.last_push is not None and status.waiting == 0 and status.pushed_votes == 3
    service.sync.flush()


def test_a_failed_push_loses_nothing_and_is_retried(setup):
    settings, api = setup
    service = start(settings, api)
    uploader = service.sync.uploader
    battle_and_vote(service, "a")
    uploader.trigger().result()
    api.fail_next = 1
    battle_and_vote(service, "b")
    battle_and_vote(service, "tie")
    with pytest.raises(HubDownError):
        uploader.trigger().result()
    status = service.sync.status()
    assert status.waiting == 2 and "503" in status.last_error
    battle_and_vote(service, "both_bad")
    uploader.trigger().result()
    votes = repo_votes(api)
    assert sorted(votes.column("vote").to_pylist()) == ["a", "b", "both_bad", "tie"]
    assert not votes.skipped  # nothing twice
    names = sorted(p.name for p in (api.repo_dir(REPO) / "data").glob("*.parquet"))
    shard = Path(service.vote_log.path).stem
    assert names == [f"{shard}-000001.parquet", f"{shard}-000002.parquet"]
    assert service.sync.status().waiting == 0 and service.sync.status().last_error is None
    service.sync.flush()


def test_final_flush_on_shutdown_then_nothing_more(setup):
    """After the final flush a vote is refused, never acknowledged: the process exits next
    and its disk goes with it, so a vote saved now would be lost. The refusal reaches the
    visitor as a refusal (ArenaError, which the page and the API show as one), and nothing
    counts the vote: the rate limiter's place and the session's rank are given back."""
    settings, api = setup
    strict = Settings(**{**settings.__dict__, "rate_limit": 3})
    service = start(strict, api)
    battle_and_vote(service, "a")
    battle_and_vote(service, "b")
    service.sync.flush()
    assert len(repo_votes(api)) == 2
    view = service.new_battle("speech")
    with pytest.raises(ArenaError, match="restarting: your vote was not saved"):
        service.vote(view.handle, "tie", voter="v", session="s1")
    assert service.vote_log.written == 2
    assert service.limiter.allow("v")  # the third place of three is still free
    assert service.sessions.next("s1") == 1  # the refused vote took no rank
    service.sync.uploader.trigger().result()  # stopped: the scheduler pushes nothing more
    assert len(repo_votes(api)) == 2


class SlowHub(LocalHubApi):
    """A commit that stays on the wire until the test lets it land, as a real one takes
    a moment (the real Hub cannot be reached from here; this stand-in writes to a folder)."""

    def __init__(self, root):
        super().__init__(root)
        self.started, self.release = threading.Event(), threading.Event()
        self.slow = False

    def create_commit(self, *args, **kwargs):
        if self.slow:
            self.started.set()
            self.release.wait(30)
        return super().create_commit(*args, **kwargs)


def test_a_vote_cast_during_the_final_flush_is_refused_or_pushed_never_lost(tmp_path):
    """SIGTERM's flush read the shard once for its last push, then the handler exited: a
    vote acknowledged while that commit was on the wire, or after it, was never pushed
    (on a Space the disk goes with the process). Now the flush closes the log first:
    every vote the log acknowledged is on the Hub, every later one is refused. The Hub is
    ``LocalHubApi`` (tests/hubfake.py), a folder, with commits held back by the test."""
    api = SlowHub(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    acked = [log.append(arena="speech", model_a="x", model_b="y", vote="a")]
    api.slow = True
    flusher = threading.Thread(target=sync.flush, kwargs={"timeout": 30})
    flusher.start()  # what the SIGTERM handler does
    assert api.started.wait(30)  # the final push has read the shard; its commit is in flight
    refused = 0
    for vote in ("b", "tie"):  # one while the commit is on the wire, one after the flush
        try:
            acked.append(log.append(arena="speech", model_a="x", model_b="y", vote=vote))
        except LogClosedError:
            refused += 1
        api.release.set()
        flusher.join()
    pushed = set(repo_votes(api).column("vote_id").to_pylist())  # then the process exits
    assert {v.vote_id for v in acked} <= pushed and refused == 2


SIGTERM_SCRIPT = """
import sys, time
sys.path[:0] = [{tests!r}, {root!r}]
from pathlib import Path
from hubfake import LocalHubApi
from arena_core.dataset.hub import HubSync
from arena_core.votes.log import VoteLog, new_shard_name
sync = HubSync("org/arena-votes", Path({data!r}), hf_api=LocalHubApi(Path({hub!r})), every_minutes=60)
shard = new_shard_name()
log = VoteLog(sync.votes_dir, lock=sync.lock, shard_name=shard)
sync.start(log)
for vote in ("a", "b", "tie"):
    log.append(arena="speech", model_a="x", model_b="y", vote=vote)
sync.flush_on_sigterm()
print("ready", flush=True)
for _ in range(1200):  # the main thread as Gradio's launch() keeps it: awake every 0.1 s
    time.sleep(0.1)
"""


def test_sigterm_pushes_waiting_votes_before_exiting(tmp_path):
    script = SIGTERM_SCRIPT.format(tests=str(TESTS), root=str(ROOT), data=str(tmp_path / "data"),
                                   hub=str(tmp_path / "hub"))  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    votes = read_votes(LocalHubApi(tmp_path / "hub").repo_dir(REPO) / "data")
    assert sorted(votes.column("vote").to_pylist()) == ["a", "b", "tie"]


def test_two_writers_in_one_folder_each_push_their_own_shard(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    writers = [writer(tmp_path / "data", api) for _ in range(2)]
    for k in range(10):
        writers[k % 2][1].append(arena="speech", model_a="x", model_b="y", vote="ab"[k % 2])
        if k == 4:
            writers[0][0].uploader.trigger().result()
    for sync, _ in writers:
        sync.flush()
    votes = repo_votes(api)
    assert len(votes) == 10 and not votes.skipped
    stems = {p.name.rsplit("-", 1)[0] for p in (api.repo_dir(REPO) / "data").glob("*.parquet")}
    assert stems == {w.path.stem for _, w in writers}


def test_load_dataset_and_the_cli_read_the_synced_repo(setup):
    datasets = pytest.importorskip("datasets")
    settings, api = setup
    service = start(settings, api)
    for k in range(6):
        battle_and_vote(service, "ab"[k % 2], voter=f"v{k}")
    battle_and_vote(service, "tie", prompt="A prompt typed by hand.")  # null prompt_id and category
    service.sync.flush()
    repo = api.repo_dir(REPO)
    loaded = datasets.load_dataset(str(repo), split="train")
    assert len(loaded) == 7 and loaded.column_names == [f.name for f in FIELDS]
    assert loaded.features["flags"].feature.dtype == "string"
    assert sum(x is None for x in loaded["judge"]) == 7
    cli = subprocess.run(
        [sys.executable, "-m", "arena_core", "leaderboard", "--votes", str(repo / "data"), "--registry",
         str(repo / "registry" / "registry.yaml"), "--arena", "speech", "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    expected = json.loads(json.dumps(service.board("speech").to_json()))
    assert board_part(json.loads(cli.stdout)) == expected


def test_published_files_hold_no_raw_address_or_name(setup):
    settings, api = setup
    service = start(settings, api)
    raw = "203.0.113.77"
    battle_and_vote(service, "a", voter=voter_hash(settings.voter_salt, f"ip:{raw}"))
    battle_and_vote(service, "b", voter=voter_hash(settings.voter_salt, "user:ada-lovelace"))
    service.sync.flush()
    blobs = b"".join(p.read_bytes() for p in api.repo_dir(REPO).rglob("*") if p.is_file())
    assert raw.encode() not in blobs and b"ada-lovelace" not in blobs
    assert all(len(v) == 20 for v in repo_votes(api).column("voter").to_pylist())


def test_without_a_token_votes_stay_local(tmp_path, caplog):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    settings = Settings(
        registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data", dataset_repo=REPO
    )
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    assert service.sync is None and "HF_TOKEN is not" in caplog.text


def test_a_live_neighbours_shard_is_not_adopted(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    first, first_log = writer(tmp_path / "data", api)
    for vote in "ab":
        first_log.append(arena="speech", model_a="x", model_b="y", vote=vote)
    second, _ = writer(tmp_path / "data", api)  # starts while the first still runs, unpushed
    first.flush()
    second.flush()
    votes = repo_votes(api)
    assert len(votes) == 2 and not votes.skipped  # no copy adopted by the second process


def test_nothing_is_pushed_or_adopted_before_the_hubs_copy_is_read(tmp_path, caplog):
    api = LocalHubApi(tmp_path / "hub")
    seed_repo(api, [row(k) for k in range(3)])
    earlier = VoteLog(tmp_path / "data" / "votes")  # an earlier run, all pushed but row 3
    earlier.path.write_text("\n".join(json.dumps(row(k)) for k in range(4)) + "\n")
    earlier.close()
    api.snapshot_download = lambda **kwargs: (_ for _ in ()).throw(HubDownError("offline"))
    sync, log = writer(tmp_path / "data", api)
    log.append(arena="speech", model_a="x", model_b="y", vote="a")
    assert sync.uploader is None and sync.status().waiting == 1
    assert "could not download" in caplog.text
    assert len(repo_votes(api)) == 3 and not api.commits  # nothing pushed blind
    del api.snapshot_download  # the Hub answers again
    assert sync.connect()
    sync.flush()
    votes = repo_votes(api)
    assert len(votes) == 5 and not votes.skipped  # row 3 adopted, the new vote pushed, no copy


def test_a_compaction_while_earlier_files_are_adopted_does_not_stop_the_sync(tmp_path, monkeypatch):
    """The operator's cron compacted the vote folder while HubSync listed and read the
    earlier shards: start() raised FileNotFoundError (the app could not start; the
    background reconnect thread died for good). The Hub is a local stand-in here."""
    import arena_core.votes.read as read_module
    from arena_core.dataset.compact import compact

    api = LocalHubApi(tmp_path / "hub")
    seed_repo(api, [row(k) for k in range(2)])
    earlier = VoteLog(tmp_path / "data" / "votes")  # an earlier run: rows 0-1 pushed, 2 not
    earlier.path.write_text("\n".join(json.dumps(row(k)) for k in range(3)) + "\n")
    earlier.close()
    old = time.time() - 7200
    os.utime(earlier.path, (old, old))
    real_read = read_module.read_votes

    def read_during_compaction(*args, **kwargs):  # the listing is taken: the files move now
        if earlier.path.exists():
            assert compact(tmp_path / "data" / "votes").votes == 3
        return real_read(*args, **kwargs)

    monkeypatch.setattr(read_module, "read_votes", read_during_compaction)
    sync, log = writer(tmp_path / "data", api)
    monkeypatch.undo()
    assert sync.uploader is not None
    log.append(arena="speech", model_a="x", model_b="y", vote="a")
    sync.flush()
    votes = repo_votes(api)
    assert len(votes) == 4 and not votes.skipped  # row 2 adopted from the compacted part


def test_a_file_deleted_from_the_repo_is_not_counted_after_a_restart(setup):
    """``snapshot_download`` never deletes a local file: a file the operator deleted from
    the repo (forged votes) stayed in the local copy, and every later start replayed it.
    Now the copy is pruned to the repo's listing at the downloaded commit. The Hub is
    ``LocalHubApi`` (tests/hubfake.py), a folder the test edits as the operator would."""
    settings, api = setup
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(1, 6)])  # five votes, later found forged
    first = start(settings, api)
    assert first.board("speech").votes_used == 5
    first.sync.flush()
    first.close()
    api.create_commit(REPO, [CommitOperationDelete("data/votes-earlier-000001.parquet")],
                      commit_message="remove forged votes", repo_type="dataset")  # fmt: skip
    second = start(settings, api)  # the Space restarts on the same disk
    assert second.board("speech").votes_used == 0
    assert not list(second.sync.hub_votes.iterdir())
    second.sync.flush()
    second.close()


def test_a_compacted_repo_replays_without_duplicates_after_a_restart(setup, tmp_path):
    """A compaction on the Hub rolls files into a monthly part and deletes them; the local
    copy kept both, and the restarted Space skipped each vote once as a duplicate, where a
    replay of the repo skips nothing. The Hub is ``LocalHubApi``, its commit dates set by
    the test so that the compaction takes the files."""
    settings, api = setup
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(1, 6)])
    first = start(settings, api)
    first.sync.flush()
    first.close()
    hours_ago = datetime.now(UTC) - timedelta(hours=2)
    for name in [*api.commit_dates, "data/votes-earlier-000001.parquet"]:
        api.commit_dates[name] = hours_ago
    assert compact_repo(api, REPO, tmp_path / "work", min_age_minutes=60).rolled
    second = start(settings, api)
    assert second.board("speech").votes_used == 5 and not second.progress.skipped
    second.sync.flush()
    second.close()


def test_votes_the_operator_deleted_are_not_pushed_again_from_an_earlier_local_file(setup):
    """An earlier run's shard holds votes the repo had (and that the operator then deleted)
    and votes it lacked. Once the local copy drops the deleted file, its votes must not
    look unpublished: adopted again, the forged votes would come back. The Hub is
    ``LocalHubApi`` (tests/hubfake.py), a folder edited by the test as the operator would."""
    settings, api = setup
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k) for k in range(3)])  # rows 0-2, later found forged
    earlier = VoteLog(settings.votes_dir)  # an earlier run: rows 0-2 pushed, 3-4 not
    earlier.path.write_text("".join(json.dumps(row(k)) + "\n" for k in range(5)))
    first = start(settings, api)
    first.sync.flush()  # rows 3-4 adopted and pushed
    first.close()
    assert len(repo_votes(api)) == 5
    api.create_commit(REPO, [CommitOperationDelete("data/votes-earlier-000001.parquet")],
                      commit_message="remove forged votes", repo_type="dataset")  # fmt: skip
    second = start(settings, api)
    assert second.board("speech").votes_used == 2
    second.sync.flush()
    second.close()
    expected = [row(k)["vote_id"] for k in (3, 4)]
    assert sorted(repo_votes(api).column("vote_id").to_pylist()) == expected


def test_the_board_after_a_restart_is_the_commit_it_names(tmp_path, monkeypatch, capsys):
    """After a restart on a kept disk the earlier run's shard (all pushed) and the Hub's
    copy of the same votes were both replayed: each vote a skipped duplicate, so the
    board's skip counts differed from ``leaderboard --repo --revision <commit>`` at the
    very commit it names. Now earlier files whose votes the downloaded copy holds are set
    aside (kept, not replayed). The Hub is ``HistoryHubApi`` (tests/hubhistory.py), a
    folder that keeps every commit's files so the CLI can read that revision."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = HistoryHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, 5)])
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data",
                        voter_salt="s", dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip
    env = {"PATH": os.environ.get("PATH", "")}
    first = build_steady_service(settings, env=env, hf_api=api)
    first.load()
    for choice in ("a", "b", "tie"):
        battle_and_vote(first, choice)
    first.sync.flush(timeout=5)  # every vote pushed
    first.close()
    second = build_steady_service(settings, env=env, hf_api=api)  # restart, disk kept
    second.load()
    board, revision = service_revisions(second).around(lambda: second.board("speech"))
    assert revision.exact_commit and revision.unpushed == 0
    monkeypatch.setattr(source, "API_FACTORY", lambda: api)
    assert cli.main(["leaderboard", "--repo", REPO, "--revision", revision.commit,
                     "--arena", "speech", "--format", "json"]) == 0  # fmt: skip
    space = json.loads(json.dumps(board.to_json()))
    assert board_part(json.loads(capsys.readouterr().out)) == space
    assert not second.progress.skipped
    aside = settings.votes_dir / PUBLISHED_DIR / first.vote_log.path.name
    assert aside.is_file() and not first.vote_log.path.exists()  # kept, not replayed
    second.sync.flush(timeout=5)
    second.close()
