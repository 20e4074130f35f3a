"""A board names its revision; ``leaderboard --repo ID --revision SHA`` prints it again.

The real Hugging Face Hub cannot be reached from the test machine: the dataset repo is
``HistoryHubApi`` (tests/hubhistory.py), a local stand-in that keeps every commit's
files, injected into the Space (``build_service(hf_api=...)``) and into the command line
(``arena_core.snapshots.source.API_FACTORY``).
"""

import codecs
import json
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hubfake import REPO
from hubhistory import synced_space
from hypothesis import given, settings
from hypothesis import strategies as st
from test_service import make_service

from arena_core import cli
from arena_core.snapshots import revision as revision_module
from arena_core.snapshots import source
from arena_core.snapshots.live import LiveBoards
from arena_core.snapshots.page import reproduce_command
from arena_core.snapshots.revision import (
    LiveRevisions,
    Revision,
    board_settings,
    file_sha256,
    revision_of,
    service_revisions,
)
from arena_core.snapshots.source import board_part
from arena_core.votes.clean import FUTURE_SLACK_US
from arena_core.votes.log import VoteLog
from arena_core.votes.parquet import parquet_bytes
from arena_core.votes.read import read_votes, vote_files
from arena_core.window import format_us


@pytest.fixture
def space(tmp_path, monkeypatch):
    with synced_space(tmp_path, monkeypatch, earlier_votes=4) as running:
        yield running


def vote(service, choice):
    view = service.new_battle("speech", "Good morning.")
    return service.vote(view.handle, choice, voter="v").vote_id


def printed(capsys, *args) -> dict:
    assert cli.main(["leaderboard", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_board_names_its_commit_and_the_cli_prints_it_again_digit_for_digit(space, capsys):
    service, api, settings = space
    ids = [vote(service, c) for c in ("a", "b", "tie", "a", "b")]
    service.sync.uploader.trigger().result()
    revisions = service_revisions(service)
    board, revision = revisions.around(lambda: service.board("speech"))
    # 4 seeded + 5 cast, all pushed: the stand-in's head holds exactly the board's votes.
    assert revision == Revision(votes_read=9, last_vote_id=ids[-1], repo=REPO,
                                commit=api.head(REPO), unpushed=0, registry_published=True)  # fmt: skip
    assert revision.exact_commit
    shown = board_settings(service.params, arena="speech", unavailable=[],
                           registry_sha256=file_sha256(settings.registry))  # fmt: skip
    assert reproduce_command(revision, shown) == (
        f"python -m arena_core leaderboard --repo {REPO} --revision {revision.commit} "
        f"--arena speech --read-at {revision.read_at} --format json"
    )
    # Two more votes, not pushed yet: the board says so, and is no longer that commit's.
    later = [vote(service, c) for c in ("b", "b")]
    board_later, revision_later = revisions.around(lambda: service.board("speech"))
    assert (revision_later.commit, revision_later.unpushed) == (revision.commit, 2)
    assert revision_later.last_vote_id == later[-1] and not revision_later.exact_commit
    service.sync.uploader.trigger().result()
    # The earlier commit still gives the earlier board, with the published registry.
    doc = printed(capsys, "--repo", REPO, "--revision", revision.commit, "--arena", "speech",
                  "--read-at", revision.read_at)  # fmt: skip
    assert board_part(doc) == json.loads(json.dumps(board.to_json()))
    assert doc["revision"] == revision.to_json()
    assert doc["settings"] == shown
    assert doc["code_version"]["package"] == "0.1.0"
    # And the newest commit (the default branch) gives the newest board.
    _, revision_now = revisions.around(lambda: service.board("speech"))
    assert revision_now.exact_commit and revision_now.votes_read == 11
    doc = printed(capsys, "--repo", REPO, "--arena", "speech")
    assert board_part(doc) == json.loads(json.dumps(board_later.to_json()))
    assert doc["revision"]["commit"] == revision_now.commit


def test_before_the_hub_answers_the_board_names_the_local_log(tmp_path):
    log = VoteLog(tmp_path / "votes")
    ids = [log.append(arena="speech", model_a="x", model_b="y", vote="a").vote_id for _ in range(3)]
    hub = {"repo": REPO, "commit": None, "unpushed": None}
    revisions = LiveRevisions(lambda: [log.path], log.lock, lambda: hub)
    _, revision = revisions.around(lambda: None)
    assert revision == Revision(votes_read=3, last_vote_id=ids[-1], **hub)
    assert "has not answered yet" in revision.label() and not revision.exact_commit
    settings = board_settings(__import__("arena_core.leaderboard").leaderboard.BoardParams(),
                              arena="speech", unavailable=["m2"])  # fmt: skip
    assert reproduce_command(revision, settings).startswith(
        "python -m arena_core leaderboard --votes data/votes data/hub/data --registry"
    )


def test_live_revisions_count_distinct_votes_and_follow_the_files(tmp_path):
    one, two = VoteLog(tmp_path / "a"), VoteLog(tmp_path / "b")
    first = [one.append(arena="s", model_a="x", model_b="y", vote="a") for _ in range(3)]
    files = [one.path, two.path]
    revisions = LiveRevisions(lambda: [f for f in files if f.exists()], one.lock)
    assert revisions.read(revisions.position()) == Revision(3, first[-1].vote_id)
    # The same vote in a second file (a copy of the Hub's) counts once.
    two.path.write_bytes(one.path.read_bytes().splitlines(keepends=True)[0])
    assert revisions.read(revisions.position()).votes_read == 3
    newer = one.append(arena="s", model_a="x", model_b="y", vote="b")
    assert revisions.read(revisions.position()) == Revision(4, newer.vote_id)
    # Half a line (a write in progress) waits until it is whole.
    line = one.path.read_bytes().splitlines(keepends=True)[-1]
    later = line.replace(newer.vote_id.encode(), b"00000000-0000-4000-8000-000000000099")
    with one.path.open("ab") as f:
        f.write(later[:20])
    assert revisions.read(revisions.position()) == Revision(4, newer.vote_id)
    with one.path.open("ab") as f:
        f.write(later[20:])
    assert revisions.read(revisions.position()).votes_read == 5
    # A file removed (compacted away) takes its votes with it.
    one.path.unlink()
    assert revisions.read(revisions.position()) == Revision(1, first[0].vote_id)


def _line(vote_id, second):
    return json.dumps({"schema_version": 4, "vote_id": vote_id, "ts": f"2026-01-01T00:00:{second:02d}Z",
                       "arena": "ar", "model_a": "m1", "model_b": "m2", "vote": "a"}) + "\n"  # fmt: skip


def test_the_last_vote_is_the_replays_when_a_vote_repeats_later_in_another_file(tmp_path):
    """The replay keeps a repeated vote_id's earliest row: X's later copy in another file
    is dropped, so the last vote is Y, whatever each file's own last row is; also when the
    rows arrive in a shard's new lines, in either order."""
    (tmp_path / "a.jsonl").write_text(_line("X", 1) + _line("Y", 2))
    (tmp_path / "b.jsonl").write_text(_line("X", 3))
    files = sorted(tmp_path.glob("*.jsonl"))
    revisions = LiveRevisions(lambda: files, threading.Lock())
    expected = revision_of(read_votes(tmp_path))
    assert expected == Revision(2, "Y")
    assert revisions.read(revisions.position()) == expected
    # The earlier copy arrives last: Z is last until its earlier row moves it before W.
    (tmp_path / "a.jsonl").write_text(_line("W", 4) + _line("Z", 5))
    (tmp_path / "b.jsonl").write_text("")
    revisions = LiveRevisions(lambda: files, threading.Lock())
    assert revisions.read(revisions.position()) == Revision(2, "Z")
    with (tmp_path / "b.jsonl").open("a") as f:
        f.write(_line("Z", 3))
    assert revisions.read(revisions.position()) == revision_of(read_votes(tmp_path))
    assert revision_of(read_votes(tmp_path)) == Revision(2, "W")


def test_a_board_computed_while_votes_arrive_is_marked_moving(tmp_path):
    log = VoteLog(tmp_path / "votes")
    revisions = LiveRevisions(lambda: [p for p in [log.path] if p.exists()], log.lock)
    calls = []

    def busy():  # a vote lands during every computation of the board
        calls.append(log.append(arena="s", model_a="x", model_b="y", vote="a"))

    _, revision = revisions.around(busy)
    assert revision.moving and len(calls) == 3 and "refresh" in revision.label()
    _, calm = revisions.around(lambda: None)
    assert not calm.moving and calm == Revision(3, calls[-1].vote_id)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--revision", "abc", "--votes", "x"], "--revision needs --repo"),
        ([], "give --votes PATH, --repo ID or --counts FILE"),
        (["--votes", "x", "--repo", REPO], "not both"),
    ],
)
def test_the_cli_refuses_unclear_sources(args, message, capsys):
    assert cli.main(["leaderboard", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_hub_out_of_reach_is_one_line_not_a_traceback(monkeypatch, capsys):
    # The real Hub cannot be reached from this machine: the stand-in fails as a resolver
    # does when the network is down, and the command says so in one line, exit status 2.
    class Unreachable:
        def repo_info(self, *args, **kwargs):
            raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(source, "API_FACTORY", Unreachable)
    assert cli.main(["leaderboard", "--repo", REPO, "--revision", "abc123"]) == 2
    err = capsys.readouterr().err
    assert f"could not download {REPO} at abc123: ConnectionError" in err
    assert "Traceback" not in err


def test_the_revision_is_read_once_the_start_up_replay_ends_not_at_the_first_view(
    tmp_path, monkeypatch
):
    """``LiveBoards.warm``: the first board view after a restart finds the files read."""
    earlier = VoteLog(tmp_path / "votes")
    ids = [earlier.append(arena="speech", model_a="m0", model_b="m1", vote="a").vote_id
           for _ in range(3)]  # fmt: skip
    earlier.close()
    service, _ = make_service(tmp_path)  # a new process on the same folder
    loading = threading.Event()
    replay = threading.Thread(target=loading.wait)  # stands in for the start-up replay
    replay.start()
    reads = []
    real = revision_module._read_file
    monkeypatch.setattr(revision_module, "_read_file",
                        lambda path, *args: reads.append(path) or real(path, *args))  # fmt: skip
    boards = LiveBoards(service)
    warming = boards.warm(replay)
    warming.join(0.2)
    assert warming.is_alive() and not reads  # waits for the replay: it reads the same files
    loading.set()
    warming.join(30)
    assert not warming.is_alive() and reads == [earlier.path]
    _, revision = boards.board("speech")
    assert reads == [earlier.path]  # the view found them read
    assert revision == Revision(votes_read=3, last_vote_id=ids[-1])


# The revision must name exactly the votes read_votes finds in the same files at its read_at
# (what `leaderboard --read-at` replays), whatever state each file is in.

#: 2026-01-01T00:00:00Z in microseconds: the injected clock's start.
_T0 = 1_767_225_600_000_000
_SECOND = 1_000_000


def _vote(vote_id: str, ts_us: int) -> bytes:
    return json.dumps({"schema_version": 4, "vote_id": vote_id, "ts": format_us(ts_us),
                       "arena": "ar", "model_a": "m1", "model_b": "m2", "vote": "a"}).encode()  # fmt: skip


class _Clock:
    """An injected reader's clock (microseconds), moved by hand."""

    def __init__(self, now_us: int = _T0):
        self.now_us = now_us

    def __call__(self) -> int:
        return self.now_us


def _live_and_replayed(folder, clock) -> tuple[LiveRevisions, Revision]:
    live = LiveRevisions(lambda: [p for p, _ in vote_files(folder)], threading.Lock(), clock=clock)
    return live, live.read(live.position())


def _replayed(folder, now_us) -> Revision:
    return revision_of(read_votes(folder, columns=["vote_id"], now_us=now_us))


def test_a_byte_order_mark_costs_the_revision_no_vote(tmp_path):
    shard = tmp_path / "votes-1.jsonl"
    shard.write_bytes(codecs.BOM_UTF8 + b"".join(_vote(f"v{k}", _T0 - k) + b"\n" for k in range(3)))
    _, revision = _live_and_replayed(tmp_path, _Clock())
    assert revision == _replayed(tmp_path, _T0) == Revision(3, "v0")


def test_a_whole_last_line_without_its_newline_counts_until_it_is_spoilt(tmp_path):
    """As read_votes: a last line lacking its newline counts when it is one JSON object;
    half a line does not. The counted line is read again with what follows it: completed
    by its newline it stays, run on into another object it is no vote any more."""
    clock, shard = _Clock(), tmp_path / "votes-1.jsonl"
    shard.write_bytes(_vote("v0", _T0 - 3) + b"\n" + _vote("v1", _T0 - 2))
    live, revision = _live_and_replayed(tmp_path, clock)
    assert revision == _replayed(tmp_path, _T0) == Revision(2, "v1")
    for more, expected in [(b"\n", Revision(2, "v1")), (_vote("v2", _T0 - 1)[:9], Revision(2, "v1")),
                           (_vote("v2", _T0 - 1)[9:], Revision(3, "v2")),
                           (_vote("v3", _T0), Revision(2, "v1")),  # "{v2}{v3}": invalid_json
                           (b"\n" + _vote("v4", _T0), Revision(3, "v4"))]:  # fmt: skip
        with shard.open("ab") as f:
            f.write(more)
        assert live.read(live.position()) == _replayed(tmp_path, _T0) == expected, more


def test_a_row_from_the_future_counts_once_it_comes_due_though_no_file_changed(tmp_path):
    """Rows dated beyond the clock plus the slack are skipped; once the clock passes such a
    row less the slack it counts, in a shard and in a Parquet file alike, as in a replay."""
    soon = _T0 + FUTURE_SLACK_US + 2 * _SECOND
    (tmp_path / "votes-1.jsonl").write_bytes(_vote("v0", _T0) + b"\n" + _vote("v1", soon) + b"\n")
    rows = [json.loads(_vote("p0", _T0 - 1)), json.loads(_vote("p1", soon + 1))]
    (tmp_path / "2025-12.parquet").write_bytes(parquet_bytes(pa.Table.from_pylist(rows)))
    clock = _Clock()
    live, revision = _live_and_replayed(tmp_path, clock)
    assert revision == _replayed(tmp_path, _T0) == Revision(2, "v0")
    assert revision.read_at == format_us(_T0)
    clock.now_us += 2 * _SECOND  # v1 is due, p1 a microsecond later
    assert live.read(live.position()) == _replayed(tmp_path, clock.now_us) == Revision(3, "v1")
    clock.now_us += 1
    assert live.read(live.position()) == _replayed(tmp_path, clock.now_us) == Revision(4, "p1")
    clock.now_us -= 3 * _SECOND  # the clock steps back: they are from the future again
    assert live.read(live.position()) == _replayed(tmp_path, clock.now_us) == Revision(2, "v0")


#: What a shard's lines may be: a vote (a few ids, so some repeat; dated long ago, or around
#: the reader's limit, the clock plus the slack) or a line no reader takes.
_LINE = st.one_of(
    st.tuples(st.sampled_from(["v", "w", "x", "y", "z"]),
              st.one_of(st.just(-1000), st.integers(-3, 8))).map(
        lambda d: _vote(d[0], _T0 + FUTURE_SLACK_US + d[1] * _SECOND)),
    st.sampled_from([b'{"vote_id": "q', b"null", b"", b"[]", codecs.BOM_UTF8]),
)  # fmt: skip
#: A shard's whole content as the pieces it is written in: perhaps a byte-order mark, then
#: lines, some written in two pieces (half a line first), each line ending in a newline or
#: running on into the next (a last line lacking its newline, then spoilt), its own piece.
_SHARD = st.tuples(
    st.sampled_from([[], [codecs.BOM_UTF8]]),
    st.lists(st.tuples(_LINE, st.integers(0, 200), st.sampled_from([b"\n", b"\n", b""])),
             max_size=8),
).map(lambda d: d[0] + [piece for line, cut, end in d[1]
                        for piece in (line[:cut], line[cut:], end) if piece])  # fmt: skip
#: Steps: pieces written to a shard (index 2: to none) and the clock moved (seconds).
_STEPS = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(-2, 3)),
                  min_size=1, max_size=16)  # fmt: skip


@settings(max_examples=200)
@given(st.lists(_SHARD, min_size=2, max_size=2), _STEPS)
def test_live_revisions_equal_a_fresh_replay_after_any_appends_and_clock(shards, steps):
    """Two shards written piece by piece (half lines, byte-order marks, last lines without
    newlines, rows from the future, damaged lines), the clock moving on, standing still or
    stepping back: after every step the live revision is a fresh read_votes's at the same
    clock."""
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"votes-{k}.jsonl" for k in range(2)]
        written = [0, 0]
        clock = _Clock()
        live = LiveRevisions(lambda: [p for p in paths if p.exists()], threading.Lock(),
                             clock=clock)  # fmt: skip
        for shard, pieces, seconds in steps:
            clock.now_us += seconds * _SECOND
            if shard < 2:
                with paths[shard].open("ab") as f:
                    f.write(b"".join(shards[shard][written[shard] : written[shard] + pieces]))
                written[shard] += pieces
            got = live.read(live.position())
            files = [p for p in paths if p.exists()]
            want = revision_of(read_votes(files, columns=["vote_id"], now_us=clock.now_us))
            assert (got, got.read_at) == (want, want.read_at)
