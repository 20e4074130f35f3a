"""Votes on their way to the Hub dataset repo and back, attacked: restarts with half-pushed
shards, lost answers, compactions, and the board compared with a replay of the repo.

The real Hugging Face Hub cannot be reached from the test machine: ``LocalHubApi`` and
``HistoryHubApi`` (tests/hubfake.py, tests/hubhistory.py) keep the repo in a folder, and
fail with the errors the real client raises.
"""

import json
import os

from fakes import build_steady_service
from hubfake import (
    PROMPTS,
    REGISTRY,
    REPO,
    LocalHubApi,
    raw_vote_ids,
    row,
    seed_repo,
    unavailable,
)
from hubhistory import HistoryHubApi
from huggingface_hub import CommitOperationDelete

from arena_core import cli
from arena_core.snapshots import source
from arena_core.snapshots.revision import service_revisions
from arena_core.snapshots.source import board_part
from arena_core.space.config import Settings


def space_settings(tmp_path):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    return Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data",
                    voter_salt="s", dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip


def battle_and_vote(service, choice="a", voter="v"):
    view = service.new_battle("speech", None)
    return service.vote(view.handle, choice, voter=voter)


def test_a_restart_after_a_failed_last_push_shows_the_board_of_the_commit_it_names(
    tmp_path, monkeypatch, capsys
):
    """A run pushed three votes, took two more, and its last push (on SIGTERM) failed. The
    restart on the kept disk adopted the two and pushed them, and named that commit, but it
    replayed the whole earlier shard beside the Hub's copy: the board said "skipped:
    duplicate_vote_id 3" where ``leaderboard --repo --revision <commit>`` skips nothing."""
    settings = space_settings(tmp_path)
    api = HistoryHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, 5)])
    env = {"PATH": os.environ.get("PATH", "")}
    first = build_steady_service(settings, env=env, hf_api=api)
    first.load()
    for choice in ("a", "b", "tie"):
        battle_and_vote(first, choice)
    first.sync.uploader.trigger().result()  # three votes pushed
    for choice in ("a", "b"):
        battle_and_vote(first, choice)
    api.failures = [unavailable()]
    first.sync.flush(timeout=5)  # the last push fails: two acknowledged votes wait
    first.close()
    second = build_steady_service(settings, env=env, hf_api=api)  # restart, disk kept
    second.load()
    second.sync.uploader.trigger().result()  # the two adopted votes pushed
    board, revision = service_revisions(second).around(lambda: second.board("speech"))
    assert revision.exact_commit and revision.unpushed == 0
    monkeypatch.setattr(source, "API_FACTORY", lambda: api)
    assert cli.main(["leaderboard", "--repo", REPO, "--revision", revision.commit,
                     "--arena", "speech", "--format", "json"]) == 0  # fmt: skip
    replay = board_part(json.loads(capsys.readouterr().out))
    assert replay["votes_used"] == 9
    assert json.loads(json.dumps(board.to_json())) == replay
    second.sync.flush(timeout=5)
    second.close()
    third = build_steady_service(settings, env=env, hf_api=api)  # the copy is in the repo now
    third.load()
    assert third.board("speech").votes_used == 9 and not third.progress.skipped
    left = {p.name for p in settings.votes_dir.iterdir() if p.is_file()}
    assert left <= {third.vote_log.path.name}  # every earlier file, the copy too, set aside
    third.sync.flush(timeout=5)
    third.close()
    assert set(raw_vote_ids(api).values()) == {1}


def test_a_dataset_card_deleted_on_the_hub_is_published_again_at_the_next_start(tmp_path):
    """The operator deleted the repo's ``README.md`` (to rewrite it, or by mistake). The
    restarted Space compared its card with the local copy of the last download, which
    ``snapshot_download`` never deletes, found it unchanged and never published it again:
    the dataset stayed without its card, its Parquet-only config and its features, restart
    after restart. The Hub is ``LocalHubApi`` (tests/hubfake.py), a folder."""
    settings = space_settings(tmp_path)
    api = LocalHubApi(tmp_path / "hub")
    env = {"PATH": os.environ.get("PATH", "")}
    for _ in range(2):  # the second start downloads the card the first one published
        first = build_steady_service(settings, env=env, hf_api=api)
        first.load()
        first.sync.flush(timeout=5)
        first.close()
    card = api.repo_dir(REPO) / "README.md"
    assert card.is_file()
    api.create_commit(REPO, [CommitOperationDelete("README.md")], commit_message="no card",
                      repo_type="dataset")  # fmt: skip
    second = build_steady_service(settings, env=env, hf_api=api)  # restart, disk kept
    second.load()
    second.sync.flush(timeout=5)
    second.close()
    assert card.is_file()


def test_a_restart_on_one_disk_shows_the_votes_its_predecessor_took_meanwhile(
    tmp_path, monkeypatch, capsys
):
    """A restart on a kept disk starts the new process while the old one still serves: the
    new one replays the old one's shard (held) as it is then, beside the repo's copy. The
    old one took two more votes, pushed them and exited. The new board never counted those
    two, and said "skipped: duplicate_vote_id 3" (the old one's votes it read twice), while
    it claimed to be a commit whose replay skipped nothing; its revision counted 9 votes
    read, its board 7."""
    settings = space_settings(tmp_path)
    api = HistoryHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, 5)])
    env = {"PATH": os.environ.get("PATH", "")}
    old = build_steady_service(settings, env=env, hf_api=api)
    old.load()
    for choice in ("a", "b", "tie"):
        battle_and_vote(old, choice)
    old.sync.uploader.trigger().result()  # three votes pushed
    new = build_steady_service(settings, env=env, hf_api=api)  # the old one still runs
    new.load()
    for choice in ("a", "b"):
        battle_and_vote(old, choice)  # taken by the old process after the new one read
    old.sync.flush(timeout=5)  # SIGTERM: pushed
    old.close()
    new.sync.uploader.trigger().result()
    board, revision = service_revisions(new).around(lambda: new.board("speech"))
    monkeypatch.setattr(source, "API_FACTORY", lambda: api)
    assert cli.main(["leaderboard", "--repo", REPO, "--revision", revision.commit,
                     "--arena", "speech", "--format", "json"]) == 0  # fmt: skip
    replay = board_part(json.loads(capsys.readouterr().out))
    assert revision.exact_commit and board.votes_used == 9
    assert json.loads(json.dumps(board.to_json())) == replay
    new.sync.flush(timeout=5)
    new.close()
    assert set(raw_vote_ids(api).values()) == {1}


def test_votes_a_live_process_adopted_are_not_adopted_again_by_a_process_started_meanwhile(
    tmp_path,
):
    """A run's last push failed, leaving two acknowledged votes in its shard. The restart
    adopted them (a copy, ``adopted-<digest>.parquet``, queued for its next push) while the
    Hub was still failing. A third process started on the same disk meanwhile (a restart
    overlapping the live one) found that copy and another earlier file free, adopted all of
    their votes under a name of its own, and both pushed: the dataset held the two votes
    twice (found by a review). The live process now locks the files of its adoptions until
    they are pushed; the newcomer leaves them, and takes them up once they are let go."""
    settings = space_settings(tmp_path)
    api = HistoryHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, 5)])
    env = {"PATH": os.environ.get("PATH", "")}
    first = build_steady_service(settings, env=env, hf_api=api)
    first.load()
    for choice in ("a", "b"):
        battle_and_vote(first, choice)
    api.failures = [unavailable()]
    first.sync.flush(timeout=5)  # the last push fails: two acknowledged votes wait
    first.close()
    second = build_steady_service(settings, env=env, hf_api=api)  # adopts them; no push yet
    second.load()
    late = row(40)  # an earlier file freed meanwhile, with a vote the repo lacks
    (settings.votes_dir / "votes-late.jsonl").write_text(json.dumps(late) + "\n")
    third = build_steady_service(settings, env=env, hf_api=api)  # same disk, second still live
    third.load()
    second.sync.uploader.trigger().result()  # the second's adoption lands, its lock goes
    third.sync.uploader.trigger().result()  # the third takes up what the second let go
    for service in (second, third):
        service.sync.flush(timeout=5)
        service.close()
    counts = raw_vote_ids(api)
    assert len(counts) == 4 + 2 + 1 and set(counts.values()) == {1}
