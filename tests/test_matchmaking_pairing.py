"""The Space's matchmaking state: fresh counts per draw, refits off the vote path, rules wired in."""

import copy
import threading
import uuid

import numpy as np
from fakes import REGISTRY, Clock, FakeBackend

from arena_core.backends import ModelPool
from arena_core.matchmaking import MatchParams
from arena_core.registry import parse_registry
from arena_core.space.live import LiveArena
from arena_core.space.pairing import Pairing, _Window
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog
from arena_core.votes.schema import Vote


def vote(a, b, outcome="a", category="en", n=[0]):  # noqa: B006 - a counter for unique ids
    n[0] += 1
    ts = f"2026-01-01T00:{n[0] // 60 % 60:02d}:{n[0] % 60:02d}.000Z"
    return Vote(vote_id=str(uuid.uuid4()), ts=ts, arena="speech", model_a=a, model_b=b,
                vote=outcome, category=category)  # fmt: skip


def arena_and_live():
    arena = parse_registry(REGISTRY).arenas[0]
    return arena, LiveArena(arena)


def test_draws_see_every_vote_and_the_fit_follows_after_refit_votes():
    arena, live = arena_and_live()
    pairing = Pairing(live, arena, params=MatchParams(refit_votes=10), background=False)
    rng = np.random.default_rng(0)
    a, b = pairing.draw([0, 1, 2, 3], "en", rng)
    assert a != b and pairing.snap.ratings.tolist() == [1000.0] * 4
    for _ in range(9):
        live.apply(vote("m0", "m1"))
    pairing.draw([0, 1, 2, 3], "en", rng)
    assert pairing.snap.ratings.tolist() == [1000.0] * 4  # 9 votes: the old fit still serves
    live.apply(vote("m0", "m1"))
    pairing.draw([0, 1, 2, 3], "en", rng)
    assert pairing.snap.ratings[0] > 1000.0 > pairing.snap.ratings[1]  # refitted on 10 votes
    assert pairing.snap.battles[0, 1] == 10


def test_the_background_refit_publishes_a_new_fit():
    arena, live = arena_and_live()
    pairing = Pairing(live, arena, params=MatchParams(refit_votes=5))
    for _ in range(5):
        live.apply(vote("m2", "m0"))
    pairing.draw([0, 1, 2, 3], None, np.random.default_rng(1))
    pairing.wait()
    assert pairing.snap.ratings[2] > 1000.0 and pairing.snap.battles[0, 2] == 5


def test_the_exposure_window_starts_over_when_a_rebuild_left_the_total_as_it_was():
    """A rebuild took a flagged voter's 5 votes between models 0 and 1 out, and 5 new votes
    between 1 and 2 came in before the next draw: the total was unchanged, the window kept
    its marks, and model 0's recent battles came out at -5 (session 32's pairing hunt)."""
    window = _Window(votes=100)
    window.update(np.array([0, 0, 0]))
    window.update(np.array([10, 10, 0]))
    seen = window.update(np.array([5, 10, 5]))  # 10 votes before and after
    assert (seen.battles >= 0).all()
    assert seen.battles.tolist() == [0, 0, 0] and seen.votes == 0  # the rebuilt counts start it


def test_the_exposure_window_counts_only_its_last_votes():
    window = _Window(votes=10)
    cum = np.array([0, 0, 0])
    seen = window.update(cum)
    assert seen.votes == 0
    cum = np.array([8, 8, 0])  # 8 votes between models 0 and 1
    assert window.update(cum).battles.tolist() == [8, 8, 0]
    cum = cum + np.array(
        [0, 6, 6]
    )  # 6 more votes, 1 against 2: the window spans all 14 from the mark at 0
    seen = window.update(cum)
    assert seen.votes == 14 and seen.battles.tolist() == [8, 14, 6]
    cum = cum + np.array(
        [5, 0, 5]
    )  # 19 votes in all: the window now starts at the mark after 8 votes
    seen = window.update(cum)
    assert seen.votes == 11 and seen.battles.tolist() == [5, 6, 11]
    seen = window.update(np.array([1, 1, 0]))  # counts rebuilt (a replay): start over
    assert seen.votes == 0


def make_service(tmp_path, registry_doc):
    registry = parse_registry(registry_doc)
    arena = registry.arenas[0]
    backends = {m.id: FakeBackend(m) for m in arena.models}
    pool = ModelPool(arena, backends, clock=Clock())
    service = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes"),
                           rng=np.random.default_rng(0))  # fmt: skip
    service.load()
    return service


def test_the_service_keeps_never_paired_models_apart(tmp_path):
    doc = copy.deepcopy(REGISTRY)
    doc["arenas"][0]["never_paired"] = [["m0", "m1"]]
    service = make_service(tmp_path, doc)
    seen = set()
    for k in range(40):
        view = service.new_battle("speech", "Guten Tag.")  # German: m0, m1 and m3 speak it
        reveal = service.vote(view.handle, "tie", voter=f"voter-{k}")
        seen.add(frozenset((reveal.a.model_id, reveal.b.model_id)))
    assert seen == {frozenset(("m0", "m3")), frozenset(("m1", "m3"))}


def test_a_battle_is_drawn_while_a_vote_holds_the_log_lock(tmp_path):
    service = make_service(tmp_path, REGISTRY)
    done = threading.Event()
    with service.vote_log.lock:
        worker = threading.Thread(target=lambda: (service.new_battle("speech"), done.set()))
        worker.start()
        assert done.wait(timeout=60), "drawing a pair waited for the vote lock"
    worker.join()


def test_tracking_the_votes_draws_from_the_outcomes_since_the_fit(monkeypatch):
    import arena_core.matchmaking.sampler as sampler

    seen = []
    real = sampler.advance
    monkeypatch.setattr(sampler, "advance", lambda *a: seen.append(a) or real(*a))
    arena, live = arena_and_live()
    pairing = Pairing(live, arena, params=MatchParams(refit_votes=50, track_votes=True),
                      background=False)  # fmt: skip
    for _ in range(4):
        live.apply(vote("m0", "m1", "b"))
    a, b = pairing.draw([0, 1, 2, 3], "en", np.random.default_rng(0))
    assert a != b
    snap, battles, scores, _ = seen[-1]
    assert battles[0, 1] == 4 and scores[1, 0] == 4.0 and scores[0, 1] == 0.0
    moved = real(snap, battles, scores, pairing.params)
    assert moved.ratings[1] > moved.ratings[0]  # the fit has not seen them; the draw has
