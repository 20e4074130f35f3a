"""The boards rebuilt after a voter is flagged, off the vote path (arena_core/space/rebuild.py).

The rebuild's read of the log is held on an event, so the test controls when it finishes:
votes cast meanwhile must be answered at once, and once the rebuild is done the live board
must equal a replay of the whole log (the votes caught up, a voter flagged meanwhile
rebuilt again)."""

import threading

from fakes import REGISTRY
from test_service_integrity import battle, campaign, campaign_service, replayed

import arena_core.space.rebuild as rebuild_module
from arena_core.integrity.anomaly import ANOMALOUS_FLAG
from arena_core.leaderboard import BoardParams
from arena_core.registry import parse_registry
from arena_core.space.live import LiveArena
from arena_core.votes.read import read_votes
from arena_core.votes.schema import Vote


def held_reads(monkeypatch):
    """read_votes in the rebuild waits for ``release``; ``reading`` is set when one started."""
    reading, release = threading.Event(), threading.Event()

    def held(files, **kwargs):
        reading.set()
        assert release.wait(60)
        return read_votes(files, **kwargs)

    monkeypatch.setattr(rebuild_module, "read_votes", held)
    return reading, release


def test_votes_are_answered_while_the_boards_rebuild_and_caught_up_after(tmp_path, monkeypatch):
    service, _ = campaign_service(tmp_path)
    reading, release = held_reads(monkeypatch)
    campaign(service, rounds=240)
    assert "campaign" in service.detector.flagged
    assert reading.wait(60) and service.rebuilds.running
    # The rebuild is stuck reading: votes still go through, honest ones counted at once.
    for k in range(30):
        assert service.vote(battle(service, "m0", "m1"), "a", voter=f"h{k % 8}").counted
    later = service.vote(battle(service, "m2", "m0"), "a", voter="campaign")
    assert not later.counted  # written flagged: the test already knows this voter
    release.set()
    assert service.rebuilds.wait(60) and not service.rebuilds.running
    assert service.board("speech").to_json() == replayed(tmp_path).to_json()
    assert service.board("speech", "en").to_json() == replayed(tmp_path, "en").to_json()


def test_a_voter_flagged_during_a_rebuild_gets_one_of_their_own(tmp_path, monkeypatch):
    service, _ = campaign_service(tmp_path)
    reading, release = held_reads(monkeypatch)
    campaign(service, rounds=240)
    assert reading.wait(60)
    # A second voter who always picks m2, while the first rebuild is held.
    for k in range(90):
        a, b = ("m2", "m0") if k % 2 else ("m1", "m2")
        service.vote(battle(service, a, b), "a" if a == "m2" else "b", voter="second")
        service.vote(battle(service, "m0", "m1"), "a", voter=f"h{k % 8}")
    assert "second" in service.detector.flagged
    release.set()
    assert service.rebuilds.wait(60)
    live = service.board("speech")
    assert live.to_json() == replayed(tmp_path).to_json()
    assert live.skipped["anomalous_voter"] == sum(service.detector.flagged.values())


def test_a_full_rebuild_makes_the_one_in_flight_obsolete(tmp_path, monkeypatch):
    # reload() runs under the log's lock and takes it again: the Space's lock is HubSync's
    # reentrant one, so this log gets one too.
    service, _ = campaign_service(tmp_path, lock=threading.RLock())
    reading, release = held_reads(monkeypatch)
    campaign(service, rounds=240)
    assert reading.wait(60)
    service.reload()  # as when the Hub's votes arrive: everything replayed under the lock
    assert not service.rebuilds.running
    service.vote(battle(service, "m0", "m1"), "a", voter="h3")
    release.set()  # the old rebuild finishes reading and must change nothing
    for thread in threading.enumerate():
        if thread.name == "board-rebuild":
            thread.join(60)
    assert service.board("speech").to_json() == replayed(tmp_path).to_json()


def test_a_caught_up_vote_of_a_voter_flagged_since_is_left_out_at_once():
    """A vote written before its voter was flagged carries no flag; when the boards catch up
    on it (``excluded=True``) it is left out there and then, counted as ``anomalous_voter``
    on the arena's board and its category's, as a replay leaves it out. The rebuild test
    above looks only after a second full rebuild, which hid a live board that counted it."""
    live = LiveArena(parse_registry(REGISTRY).arenas[0])

    def cast(k, winner="a", **kwargs):
        return Vote(vote_id=f"v{k}", ts=f"2026-01-01T00:00:{k:02d}.000Z", arena="speech",
                    model_a="m0", model_b="m1", vote=winner, category="en", **kwargs)  # fmt: skip

    assert live.apply(cast(1, voter="honest")) is not None
    before = [live.board(c).to_json()["rows"] for c in (None, "en")]
    assert live.apply(cast(2, "b", voter="campaign"), excluded=True) is None
    for category, rows in zip((None, "en"), before, strict=True):
        board = live.board(category)
        assert board.votes_used == 1 and board.skipped == {"anomalous_voter": 1}
        assert board.to_json()["rows"] == rows  # the ratings did not move
    assert live.battles()[0, 1] == 1  # matchmaking does not count it either
    # A vote flagged when written is counted as flagged first, as select_votes orders reasons.
    live.apply(cast(3, "b", voter="campaign", flags=(ANOMALOUS_FLAG,)), excluded=True)
    assert live.board().skipped == {"anomalous_voter": 1, "flagged": 1}
    # Boards that include flagged votes count it like any other.
    everyone = LiveArena(live.arena, BoardParams(include_flagged=True))
    assert everyone.apply(cast(2, "b", voter="campaign"), excluded=True) is not None
    assert everyone.board().votes_used == 1 and not everyone.board().skipped
