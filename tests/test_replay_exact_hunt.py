"""Hunt: the Space's board against the replay a researcher runs with the command printed
under it, to the last digit.

The real Hub cannot be reached from the test machine: the dataset repo is
``HistoryHubApi`` (tests/hubhistory.py), which keeps every commit's files, injected into
the Space and into ``leaderboard --repo`` (``arena_core.snapshots.source.API_FACTORY``).
"""

import json
import os
import shlex
import time
from datetime import UTC, datetime, timedelta

from fakes import Clock, build_steady_service
from hubfake import PROMPTS, REGISTRY, REPO, row, seed_repo, settled
from hubhistory import HistoryHubApi
from huggingface_hub import CommitOperationAdd
from test_service import make_service

from arena_core import cli
from arena_core.leaderboard import Entrant, board_from_votes
from arena_core.snapshots import source
from arena_core.snapshots.live import LiveBoards
from arena_core.snapshots.page import reproduce_command, revision_html
from arena_core.snapshots.source import board_part
from arena_core.snapshots.version import code_version
from arena_core.space.config import Settings
from arena_core.votes.read import read_votes
from arena_core.window import parse_instant

#: The registry of the Space's previous deploy: the new one (``REGISTRY``) adds Klatt.
OLD_REGISTRY = REGISTRY.replace(
    "      - {id: espeak/en+klatt, name: Klatt, backend: {type: espeak, voice: en+klatt}}\n", ""
)


def printed(capsys, command: str) -> dict:
    """What the printed ``python -m arena_core leaderboard ...`` command prints."""
    capsys.readouterr()
    assert cli.main(shlex.split(command)[3:]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_board_right_after_a_restart_names_a_commit_holding_the_registry_it_was_rated_with(
    tmp_path, monkeypatch, capsys
):
    """A restart with a changed registry (a model added, a prior changed) publishes it in a
    commit of its own, after downloading the repo. The board's revision named the
    downloaded commit until the first vote was pushed, and that commit holds the previous
    registry (or none, on a first start): the printed ``--repo --revision`` command
    replayed the votes with other models, names and priors than the Space's board (here the
    new model's row was missing, and every name was another), and its
    ``settings.registry_sha256`` differed from the board's. The same for a daily snapshot
    written before this run's first push. The board must name a commit whose registry is
    the one it was rated with."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = HistoryHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, 5)])
    api.create_commit(REPO, [CommitOperationAdd("registry/registry.yaml", OLD_REGISTRY.encode()),
                             CommitOperationAdd("registry/prompts.yaml", PROMPTS.encode())],
                      commit_message="the previous deploy's registry", repo_type="dataset")  # fmt: skip
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data",
                        voter_salt="s", dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip
    service = build_steady_service(settings, env={"PATH": os.environ.get("PATH", "")}, hf_api=api)
    try:
        service.load()
        monkeypatch.setattr(source, "API_FACTORY", lambda: api)
        boards = LiveBoards(service)
        board, revision = boards.board("speech")
        settings_shown = boards.settings("speech")
        assert revision.exact_commit  # no vote of this run yet: the commit alone is the board
        doc = printed(capsys, reproduce_command(revision, settings_shown))
        assert doc["settings"]["registry_sha256"] == settings_shown["registry_sha256"]
        assert board_part(doc) == json.loads(json.dumps(board.to_json()))
    finally:
        service.sync.flush(timeout=5)
        service.close()


def test_a_board_shown_after_a_row_from_the_future_came_due_names_the_clock_it_was_read_by(
    tmp_path,
):
    """A replica whose clock runs fast wrote a row dated ahead: the start-up replay skips it
    as ``future_ts`` and replays every file again once it comes due, a second after (plus
    the replay's own time, seconds at a million votes). In between, the board still skipped
    the row, but its revision was read by the wall clock, which counts it, and named that
    clock as ``read_at``: ``leaderboard --read-at <read_at>`` counted a vote the board did
    not. The replay's wall clock is held back here, which widens that gap to make it
    certain; the revision must name a clock the board's rows were judged by."""
    folder = tmp_path / "votes"
    folder.mkdir()
    ahead = datetime.now(UTC) + timedelta(minutes=10, seconds=1)
    line = {"schema_version": 4, "vote_id": "00000000-0000-4000-8000-000000000001",
            "ts": ahead.isoformat().replace("+00:00", "Z"), "arena": "speech",
            "model_a": "m0", "model_b": "m1", "vote": "a"}  # fmt: skip
    (folder / "votes-replica.jsonl").write_text(json.dumps(line) + "\n")
    # The timer that replays every file again looks at this clock: 30 s behind, it fires late.
    service, _ = make_service(tmp_path, clock=Clock(),
                              wall_clock=lambda: datetime.now(UTC) - timedelta(seconds=30))  # fmt: skip
    try:
        assert service.board("speech").skipped["future_ts"] == 1
        while datetime.now(UTC) < ahead - timedelta(minutes=10) + timedelta(seconds=0.05):
            time.sleep(0.05)  # the row is due now; the replay of every file has not run yet
        board, revision = LiveBoards(service).board("speech")
        read_at = parse_instant(revision.read_at)
        replay = board_from_votes(read_votes(folder, now_us=read_at), "speech",
                                  entrants=Entrant.from_arena(service.registry.arena("speech")))  # fmt: skip
        assert replay.to_json() == board.to_json()
        assert revision.votes_read == board.votes_used
    finally:
        service.close()


def test_a_failed_replay_of_a_row_come_due_is_retried_and_never_freezes_the_clock(
    tmp_path, monkeypatch
):
    """The boards' clock is held short of a future row's due time until a full replay counts
    it. When that replay failed (an I/O error in the timer's thread), the thread ended, no
    retry came, and the clock stayed held for good: once ten minutes behind, every new
    vote looked as if from the future to the revisions and to the background rebuilds,
    which left it out of the live boards (found by the session's review). Now the replay is
    retried, and the clock is held at most :data:`replay._HOLD_MAX_US` past the due time."""
    from arena_core.space import replay as replay_module

    monkeypatch.setattr(replay_module, "_RETRY_S", 0.2)
    monkeypatch.setattr(replay_module, "_HOLD_MAX_US", 1_500_000)
    folder = tmp_path / "votes"
    folder.mkdir()
    ahead = datetime.now(UTC) + timedelta(minutes=10, seconds=1)
    line = {"schema_version": 4, "vote_id": "00000000-0000-4000-8000-000000000002",
            "ts": ahead.isoformat().replace("+00:00", "Z"), "arena": "speech",
            "model_a": "m0", "model_b": "m1", "vote": "a"}  # fmt: skip
    (folder / "votes-replica.jsonl").write_text(json.dumps(line) + "\n")
    service, _ = make_service(tmp_path, clock=Clock())
    replay = service.replay
    reload, calls = replay.reload, []

    def failing_once():
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise OSError(5, "Input/output error")
        return reload()

    replay.reload = failing_once
    try:
        assert service.board("speech").skipped["future_ts"] == 1
        due = ahead - timedelta(minutes=10)
        while datetime.now(UTC) < due + timedelta(seconds=1.1) or len(calls) < 2:
            assert datetime.now(UTC) < due + timedelta(seconds=20), "no retry came"
            time.sleep(0.05)
        time.sleep(0.5)  # the retry's replay runs
        assert service.board("speech").skipped.get("future_ts", 0) == 0  # counted now
        assert abs(replay.boards_clock_us() - time.time_ns() // 1000) < 1_000_000
        # Held at most that long even if every replay failed.
        replay._due_us = time.time_ns() // 1000 - 2_000_000
        assert abs(replay.boards_clock_us() - time.time_ns() // 1000) < 1_000_000
    finally:
        service.close()


class PublishFails(HistoryHubApi):
    """A stand-in repo refusing the next ``registry_failures`` commits of the card and registry (the
    Hub answers everything else: the download, the vote pushes)."""

    registry_failures = 0

    def create_commit(self, repo_id, operations, **kwargs):
        if self.registry_failures and any(
            op.path_in_repo.startswith("registry/") for op in operations
        ):
            self.registry_failures -= 1
            raise RuntimeError("503 Service Unavailable (simulated, the card's commit)")
        return super().create_commit(repo_id, operations, **kwargs)


def restarted_space(tmp_path, failures: int):
    """A Space restarted with a registry that adds Klatt, over a repo holding four votes
    and the previous deploy's registry; its first ``failures`` publishes of the registry
    fail (the one after the download, then the one before each push: the scheduler's first
    push runs as it starts). Returns (service, api, the commit the repo was at)."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = PublishFails(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, 5)])
    api.create_commit(REPO, [CommitOperationAdd("registry/registry.yaml", OLD_REGISTRY.encode()),
                             CommitOperationAdd("registry/prompts.yaml", PROMPTS.encode())],
                      commit_message="the previous deploy's registry", repo_type="dataset")  # fmt: skip
    api.registry_failures = failures
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data",
                        voter_salt="s", dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip
    service = build_steady_service(settings, env={"PATH": os.environ.get("PATH", "")}, hf_api=api)
    return service, api, api.head(REPO)


def test_a_board_whose_registry_failed_to_publish_withdraws_its_claim_until_a_push_publishes_it(
    tmp_path, monkeypatch, capsys
):
    """The publish of the card and registry after the download failed (logged, the Space
    went on): the boards named the downloaded commit, which holds the previous deploy's
    registry, and the page still printed "Same board, to the last digit" over a
    ``--repo --revision`` command that replayed other models and priors; nothing published
    the registry again before the next restart. Now the revision says
    ``registry_published: false``, the page says why the Hub alone does not reproduce the
    board (and gives the command with the Space's own registry, which does), the publish is
    retried at the next push tick, and from then on the printed command is exact."""
    service, api, downloaded = restarted_space(tmp_path, failures=2)
    try:
        service.load()
        settled(service.sync)  # the first tick's retry failed too
        monkeypatch.setattr(source, "API_FACTORY", lambda: api)
        monkeypatch.chdir(tmp_path)  # the Space's own registry.yaml, as the command names it
        boards = LiveBoards(service)
        board, revision = boards.board("speech")
        shown = boards.settings("speech")
        assert revision.commit == downloaded and revision.unpushed == 0
        footer = revision_html(revision, code_version(), shown)
        assert "to the last digit" not in footer and "Not reproducible from the Hub alone" in footer
        assert revision.to_json().get("registry_published") is False
        assert "does not hold the registry" in revision.label()
        # The command without the Space's registry is the claim that was false: other rows.
        bare = printed(capsys, f"python -m arena_core leaderboard --repo {REPO} "
                               f"--revision {downloaded} --arena speech --format json")  # fmt: skip
        assert bare["settings"]["registry_sha256"] != shown["registry_sha256"]
        assert bare["revision"]["registry_published"] is True  # the commit's own registry
        # The command the page gives now replays the board, and says the same of the commit.
        doc = printed(capsys, reproduce_command(revision, shown))
        assert board_part(doc) == json.loads(json.dumps(board.to_json()))
        assert doc["settings"] == shown and doc["revision"] == revision.to_json()

        service.sync.uploader.trigger().result(timeout=10)  # the next push tick: published
        board, revision = boards.board("speech")
        assert revision.commit != downloaded and revision.registry_published is True
        assert revision.exact_commit and "--registry" not in reproduce_command(revision, shown)
        assert "Same board, to the last digit" in revision_html(revision, code_version(), shown)
        doc = printed(capsys, reproduce_command(revision, shown))
        assert doc["settings"]["registry_sha256"] == shown["registry_sha256"]
        assert board_part(doc) == json.loads(json.dumps(board.to_json()))
        assert doc["revision"] == revision.to_json()
    finally:
        service.sync.flush(timeout=5)
        service.close()


def test_votes_pushed_while_the_registry_still_fails_to_publish_keep_the_claim_withdrawn(
    tmp_path, monkeypatch, capsys
):
    """A push of votes does not publish the registry: its commit holds the previous deploy's
    registry as its parent did. The boards used to name it as exact from the first push
    on; now they say ``registry_published: false`` until a retry before a push lands, and
    then name a commit holding the registry and every vote pushed."""
    service, api, downloaded = restarted_space(tmp_path, failures=3)
    try:
        service.load()
        settled(service.sync)
        monkeypatch.setattr(source, "API_FACTORY", lambda: api)
        boards = LiveBoards(service)
        shown = boards.settings("speech")
        view = service.new_battle("speech", "Good morning.")
        service.vote(view.handle, "a", voter="v")
        service.sync.uploader.trigger().result(timeout=10)  # the votes land, the registry not
        _, revision = boards.board("speech")
        assert revision.commit != downloaded and revision.unpushed == 0
        assert "to the last digit" not in revision_html(revision, code_version(), shown)
        assert "--registry" in reproduce_command(revision, shown)
        assert revision.to_json().get("registry_published") is False

        service.sync.uploader.trigger().result(timeout=10)  # nothing new to push: published
        board, revision = boards.board("speech")
        assert revision.registry_published is True and revision.exact_commit
        assert revision.votes_read == 5
        doc = printed(capsys, reproduce_command(revision, shown))
        assert doc["settings"]["registry_sha256"] == shown["registry_sha256"]
        assert board_part(doc) == json.loads(json.dumps(board.to_json()))
    finally:
        service.sync.flush(timeout=5)
        service.close()


def test_a_daily_snapshot_written_while_the_registry_is_unpublished_says_so(
    tmp_path, monkeypatch, capsys
):
    """A daily snapshot pushes the waiting votes and names that commit; while the registry
    failed to publish, that commit held the previous deploy's, and the snapshot's revision
    did not say so (README: its boards are reproduced by ``--repo --revision``). Now its
    revision says ``registry_published: false``, and the next day's, after the retry
    landed, names a commit whose registry replays it."""
    from arena_core.snapshots.daily import DailySnapshots, SnapshotStore, hub_votes, snapshot_path

    service, api, _ = restarted_space(tmp_path, failures=3)
    try:
        service.load()
        settled(service.sync)
        monkeypatch.setattr(source, "API_FACTORY", lambda: api)
        now = [datetime(2026, 12, 1, 10, 0, tzinfo=UTC)]
        daily = DailySnapshots(service.registry, service.params, source=hub_votes(service.sync),
                               store=SnapshotStore(tmp_path / "data", service.sync),
                               clock=lambda: now[0])  # fmt: skip
        assert daily.tick()  # its push's retry of the publish fails
        first = json.loads((tmp_path / "data" / snapshot_path("speech", now[0].date())).read_text())
        assert first["revision"].get("registry_published") is False
        now[0] = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
        assert daily.tick()  # this push's retry lands
        second = json.loads(
            (tmp_path / "data" / snapshot_path("speech", now[0].date())).read_text()
        )
        revision = second["revision"]
        assert revision["registry_published"] is True
        doc = printed(capsys, f"python -m arena_core leaderboard --repo {REPO} --revision "
                              f"{revision['commit']} --arena speech --read-at "
                              f"{revision['read_at']} --format json")  # fmt: skip
        board = second["boards"][0]
        assert board_part(doc) == board_part(board) and doc["settings"] == board["settings"]
        assert doc["revision"] == revision
    finally:
        service.sync.flush(timeout=5)
        service.close()
