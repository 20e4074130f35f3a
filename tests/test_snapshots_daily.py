"""Daily snapshots of every board: one file per arena and UTC date, reproducible by the CLI.

The real Hugging Face Hub cannot be reached from the test machine: the dataset repo is
``HistoryHubApi`` (tests/hubhistory.py), a local stand-in that keeps every commit's files.
The clock is injected; no test waits for a real day.
"""

import json
import logging
import re
import time
from datetime import UTC, datetime

import pytest
from hubfake import PROMPTS, REGISTRY, REPO, refused
from hubhistory import synced_space

from arena_core import cli
from arena_core.leaderboard import BoardParams
from arena_core.registry import RegistryError, load_registry
from arena_core.snapshots import daily
from arena_core.snapshots.daily import (
    DailySnapshots,
    SnapshotStore,
    hub_votes,
    local_votes,
    snapshot_path,
)
from arena_core.snapshots.page import reproduce_command
from arena_core.snapshots.revision import Revision
from arena_core.snapshots.source import board_part
from arena_core.space.config import ConfigError, Settings
from arena_core.space.startup import start_snapshots
from arena_core.votes.log import VoteLog


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def space(tmp_path, monkeypatch):
    with synced_space(tmp_path, monkeypatch, earlier_votes=6) as running:
        yield running


def vote(service, choice, prompt="Good morning."):
    view = service.new_battle("speech", prompt)
    return service.vote(view.handle, choice, voter="v").vote_id


def snapshots_of(service, settings, clock, **kwargs):
    return DailySnapshots(service.registry, service.params, source=hub_votes(service.sync),
                          store=SnapshotStore(settings.data_dir, service.sync), clock=clock,
                          **kwargs)  # fmt: skip


def test_one_snapshot_a_day_on_the_hub_reproduced_by_the_cli(space, capsys, caplog):
    service, api, settings = space
    for choice in ("a", "b", "tie", "a"):
        vote(service, choice)
    vote(service, "b", prompt="One two three.")  # a vote of the "numbers" category
    clock = Clock(datetime(2026, 12, 1, 10, 0, tzinfo=UTC))
    daily = snapshots_of(service, settings, clock)
    assert daily.tick()
    path = snapshot_path("speech", clock.now.date())
    assert path == "leaderboards/speech/2026-12-01.json"
    published = json.loads((api.repo_dir(REPO) / path).read_text())
    assert published == json.loads((settings.data_dir / path).read_text())
    # The votes waiting were pushed first: the snapshot's commit holds all 11 votes.
    assert published["revision"]["votes_read"] == 11 and published["revision"]["unpushed"] == 0
    commits = len(api.commits)
    clock.now = clock.now.replace(hour=23, minute=59)
    assert not daily.tick() and len(api.commits) == commits  # once a day
    restarted = snapshots_of(service, settings, clock)
    assert not restarted.tick() and len(api.commits) == commits  # a restart the same day
    # Its boards are the CLI's at its commit, to the last digit, settings and all.
    commit = published["revision"]["commit"]
    for board, category in zip(published["boards"], (None, "numbers", "short"), strict=True):
        args = ["leaderboard", "--repo", REPO, "--revision", commit, "--arena", "speech",
                "--read-at", published["revision"]["read_at"], "--format", "json",
                *(["--category", category] if category else [])]  # fmt: skip
        assert cli.main(args) == 0
        doc = json.loads(capsys.readouterr().out)
        assert board_part(doc) == board_part(board) and doc["settings"] == board["settings"]
        assert doc["revision"] == published["revision"]
    assert published["boards"][0]["votes_used"] == 11 and published["boards"][1]["votes_used"] == 1
    # The next day: a Hub that does not answer is retried at the next tick.
    vote(service, "a")
    clock.now = datetime(2026, 12, 2, 0, 5, tzinfo=UTC)
    api.down = refused()
    with caplog.at_level(logging.ERROR):
        assert not daily.tick()
    assert "daily snapshot failed" in caplog.text
    assert not (settings.data_dir / snapshot_path("speech", clock.now.date())).exists()
    api.down = None
    assert daily.tick()
    second = json.loads((api.repo_dir(REPO) / "leaderboards/speech/2026-12-02.json").read_text())
    assert second["revision"]["votes_read"] == 12 and second["date"] == "2026-12-02"


def test_a_shorter_period_overwrites_the_days_file_with_the_latest(space):
    service, api, settings = space
    clock = Clock(datetime(2026, 12, 1, 1, 0, tzinfo=UTC))
    daily = snapshots_of(service, settings, clock, every_hours=6)
    assert daily.tick()
    vote(service, "a")
    clock.now = clock.now.replace(hour=6, minute=59)
    assert not daily.tick()  # six hours after 01:00 is 07:00
    clock.now = clock.now.replace(hour=7, minute=0)
    assert daily.tick()
    latest = json.loads((api.repo_dir(REPO) / "leaderboards/speech/2026-12-01.json").read_text())
    assert latest["revision"]["votes_read"] == 7
    assert latest["written"] == "2026-12-01T07:00:00Z"


def test_without_the_hub_snapshots_go_to_the_data_folder(tmp_path, capsys):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    registry = load_registry(tmp_path / "registry.yaml")
    log = VoteLog(tmp_path / "data" / "votes")
    pairs = [("espeak/en-us", "espeak/en-gb", "a"), ("espeak/en-gb", "espeak/en+klatt", "b"),
             ("espeak/en+klatt", "espeak/en-us", "tie"), ("espeak/en-us", "espeak/en-gb", "b")]  # fmt: skip
    written = [log.append(arena="speech", model_a=a, model_b=b, vote=v) for a, b, v in pairs]
    clock = Clock(datetime(2026, 12, 1, 12, tzinfo=UTC))
    daily = DailySnapshots(registry, BoardParams(), source=local_votes([log.folder]),
                           store=SnapshotStore(tmp_path / "data"), clock=clock,
                           unavailable=lambda arena_id: ["espeak/en+klatt"])  # fmt: skip
    assert daily.tick()
    snap = json.loads((tmp_path / "data/leaderboards/speech/2026-12-01.json").read_text())
    read_at = snap["revision"]["read_at"]  # the reader's clock: the snapshot's, not the test's
    assert snap["revision"] == {"votes_read": 4, "last_vote_id": written[-1].vote_id,
                                "repo": None, "commit": None, "unpushed": None, "moving": False,
                                "registry_published": None,
                                "read_at": read_at}  # fmt: skip
    args = ["leaderboard", "--votes", str(log.folder), "--registry", str(tmp_path / "registry.yaml"),
            "--arena", "speech", "--unavailable", "espeak/en+klatt", "--read-at", read_at,
            "--format", "json"]  # fmt: skip
    assert cli.main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert board_part(doc) == board_part(snap["boards"][0])
    assert doc["settings"] == snap["boards"][0]["settings"] and doc["revision"] == snap["revision"]


def test_start_snapshots_follows_the_setting(space):
    service, _, settings = space
    off = Settings(**{**settings.__dict__, "snapshot_every_hours": 0.0})
    assert start_snapshots(service, off) is None
    clock = Clock(datetime(2026, 12, 3, 8, tzinfo=UTC))
    daily = start_snapshots(service, settings, clock=clock)
    deadline = time.monotonic() + 30
    while daily.last_written is None and time.monotonic() < deadline:  # the first check
        time.sleep(0.05)
    daily.stop()
    assert daily.last_written == clock.now
    assert (settings.data_dir / "leaderboards/speech/2026-12-03.json").is_file()


@pytest.mark.parametrize(("raw", "hours"), [("", 24.0), ("6", 6.0), ("0", 0.0), ("0.5", 0.5)])
def test_the_snapshot_period_is_read_from_the_environment(raw, hours):
    env = {"ARENA_VOTER_SALT": "s", "ARENA_SNAPSHOT_EVERY_HOURS": raw}
    assert Settings.from_env(env).snapshot_every_hours == hours


@pytest.mark.parametrize("raw", ["-1", "daily", "nan", "inf", "1e20", "8761"])
def test_a_bad_snapshot_period_is_refused(raw):
    with pytest.raises(ConfigError, match="ARENA_SNAPSHOT_EVERY_HOURS"):
        Settings.from_env({"ARENA_VOTER_SALT": "s", "ARENA_SNAPSHOT_EVERY_HOURS": raw})


@pytest.mark.parametrize("arena_id", ["x/../../../escaped", "..", "a//b", "a/."])
def test_an_arena_id_that_would_leave_the_snapshot_folder_is_refused(tmp_path, arena_id):
    """The registry refuses such an id; the path is refused again where it is built."""
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY.replace("id: speech", f"id: '{arena_id}'", 1))
    with pytest.raises(RegistryError, match="not a valid id"):
        load_registry(registry)
    with pytest.raises(ValueError, match="cannot name a snapshot file"):
        snapshot_path(arena_id, datetime(2026, 1, 1, tzinfo=UTC).date())


def test_the_documented_snapshot_command_names_every_option_of_the_boards_own():
    """The module documented ``leaderboard --repo ID --revision SHA --arena A --format json``
    as printing a snapshot's board: without ``--read-at`` (nor a board's category and
    unavailable models), a row dated ahead of the snapshot's clock counts once it comes due.
    The documented command names every option of the command printed under a board."""
    documented = " ".join(daily.__doc__.split())
    start = documented.index("python -m arena_core leaderboard")
    command = documented[start : documented.index("--format json", start)]
    revision = Revision(votes_read=1, last_vote_id="v", repo=REPO, commit="a" * 40, unpushed=0,
                        read_at="2026-12-01T00:00:00.000000Z")  # fmt: skip
    printed = reproduce_command(revision, {"arena": "speech", "category": "de",
                                           "unavailable": ["espeak/en+klatt"]})  # fmt: skip
    options = re.compile(r"--[a-z][a-z-]+")
    assert set(options.findall(printed)) - {"--format"} <= set(options.findall(command))
