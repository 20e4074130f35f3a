"""How the Space picks the two models of a battle, checked against what the README and the
registry promise (a defect hunt): the fit the draws use follows the boards when a rebuild
takes votes out, and a language is offered only when two models that can run here, and may
meet, speak it. Seeded, with counts over many draws rather than single examples."""

import copy
import uuid
from collections import Counter

import numpy as np
import pytest
from fakes import REGISTRY, Clock, FakeBackend

from arena_core.backends import Availability, ModelPool
from arena_core.registry import parse_registry
from arena_core.space.live import LiveArena
from arena_core.space.pairing import Pairing
from arena_core.space.service import ArenaError, ArenaService
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes
from arena_core.votes.schema import Vote

IDS = ("m0", "m1", "m2")


def _vote(a, b, outcome, voter, n=[0]):  # noqa: B006 - a counter for unique times
    n[0] += 1
    ts = f"2026-01-01T{n[0] // 3600:02d}:{n[0] // 60 % 60:02d}:{n[0] % 60:02d}.000Z"
    return Vote(vote_id=str(uuid.uuid4()), ts=ts, arena="speech", model_a=a, model_b=b,
                vote=outcome, category="en", voter=voter)  # fmt: skip


def test_a_rebuild_that_takes_votes_out_is_followed_by_the_fit_the_draws_use(tmp_path):
    """A ballot-stuffer's 300 votes "m0 beats m1" are taken out of the boards when the voter
    is flagged (``VoteReplay._rebuild`` replays the files without them). The sampler refitted
    only once ``refit_votes`` votes more than its last fit had arrived: the live total fell
    from 360 to 60, so the fit of the removed votes (m0 at 1273, m1 at 760, their pair
    "settled" by 300 battles) kept choosing the pairs for the next 325 votes, and in 200
    honest votes after the rebuild m0 and m1 never met (0 of 200; about a third is due with
    three equal English voices). The flagged votes went on steering the draws."""
    arena = parse_registry(REGISTRY).arenas[0]
    live = LiveArena(arena)
    pairing = Pairing(live, arena, background=False)
    rng = np.random.default_rng(0)
    honest = []
    for _ in range(60):
        i, j = rng.choice(3, 2, replace=False)
        honest.append(_vote(IDS[i], IDS[j], "tie", "honest"))
    for v in honest + [_vote("m0", "m1", "a", "bot") for _ in range(300)]:
        live.apply(v)
    pairing.draw([0, 1, 2], "en", rng)
    assert pairing.snap.battles[0, 1] > 300  # the fit saw the stuffed votes
    # The voter is flagged: the boards are rebuilt from the files without their votes.
    (tmp_path / "votes.jsonl").write_bytes(b"".join(v.to_json_line() for v in honest))
    live.replay(read_votes(tmp_path))
    pairs, stale = Counter(), 0
    for _ in range(200):
        a, b = pairing.draw([0, 1, 2], "en", rng)
        stale += bool((pairing.snap.battles > live.battles()).any())  # fitted on votes taken out
        pairs[frozenset((IDS[a], IDS[b]))] += 1
        live.apply(_vote(IDS[a], IDS[b], "tie", "honest"))
    # Each of the three pairs is due about 1/3 of 200; 40 is 3.6 binomial sd under 66.7.
    assert pairs[frozenset(("m0", "m1"))] >= 40, pairs
    assert stale == 0


def test_a_rebuild_hidden_by_new_votes_and_a_failing_refit_are_both_handled(tmp_path):
    """Review of session 32: (1) 8 stuffed votes "m0 beats m1" were fitted, then 10 honest
    m0-m1 ties arrived and the stuffed votes were taken out: no pair's count fell below the
    fit's, so the rebuild went unnoticed and the stuffed fit stayed; (2) a refit that kept
    failing after a rebuild was started again on every draw. The boards' generation tells a
    rebuild, and a failed refit waits for ``refit_votes`` more votes as before."""
    arena = parse_registry(REGISTRY).arenas[0]
    live = LiveArena(arena)
    pairing = Pairing(live, arena, background=False)
    rng = np.random.default_rng(1)
    honest = [_vote("m0", "m2", "tie", "honest"), _vote("m1", "m2", "tie", "honest")]
    for v in honest + [_vote("m0", "m1", "a", "bot") for _ in range(8)]:
        live.apply(v)
    pairing.refresh()
    stuffed = pairing.snap.ratings[0] - pairing.snap.ratings[1]
    assert stuffed > 0
    later = [_vote("m0", "m1", "tie", "honest") for _ in range(10)]
    for v in later:
        live.apply(v)
    (tmp_path / "votes.jsonl").write_bytes(b"".join(v.to_json_line() for v in honest + later))
    live.replay(read_votes(tmp_path))  # the bot's votes out, the honest ones in
    assert not (live.battles() < pairing.snap.battles).any()  # the fall is hidden
    pairing.draw([0, 1, 2], None, rng)
    assert abs(pairing.snap.ratings[0] - pairing.snap.ratings[1]) < stuffed / 4
    # A refit that fails is not started again on every draw.
    calls = []

    def failing():
        calls.append(1)
        raise RuntimeError("fit failed")

    pairing.refresh = failing
    pairing.background = True
    pairing._refresh_soon = lambda: pairing._refresh_logged()
    live.replay(read_votes(tmp_path))  # another rebuild
    for _ in range(10):
        pairing.draw([0, 1, 2], None, rng)
    assert len(calls) == 1


class _Unavailable(FakeBackend):
    """A model that cannot run here (a hosted voice without a token, an engine not installed)."""

    def _check_availability(self):
        return Availability.no("not installed")


def _service(tmp_path, unavailable, never=None):
    document = copy.deepcopy(REGISTRY)
    if never:
        document["arenas"][0]["never_paired"] = never
    registry = parse_registry(document)
    arena = registry.arenas[0]
    backends = {m.id: (_Unavailable if m.id in unavailable else FakeBackend)(m)
                for m in arena.models}  # fmt: skip
    pool = ModelPool(arena, backends, clock=Clock())
    service = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes"),
                           clock=Clock(), rng=np.random.default_rng(11))  # fmt: skip
    service.load()
    return service


@pytest.mark.parametrize(
    ("unavailable", "never"),
    [({"m1", "m3"}, None), ({"m1"}, [["m0", "m3"]])],
    ids=["one German voice runs here", "the two that run here never meet"],
)
def test_a_language_only_models_that_cannot_run_here_could_pair_is_not_offered(tmp_path,
                                                                              unavailable,
                                                                              never):  # fmt: skip
    """German is spoken by m0, m1 and m3. With m1 and m3 unable to run here (availability is
    decided once per process: a missing engine or token does not come back), or with m1
    unable and m0 and m3 never paired, no German battle can ever be held. The service
    counted every model as a speaker, running here or not, so it offered German and drew
    the German set prompt for about half of the battles: 16 of 40 "new battle" clicks (seed
    11) failed with "Not enough models are answering in this arena right now. Try again in
    a minute", which would never come true. Paused models still count (a pause ends)."""
    service = _service(tmp_path, unavailable, never)
    try:
        assert service.languages("speech") == ("en",)
        failed = 0
        for _ in range(40):
            try:
                assert service.new_battle("speech").category == "en"
            except ArenaError:
                failed += 1
        assert failed == 0
        with pytest.raises(ArenaError, match="no prompts in language 'de'"):
            service.new_battle("speech", "Wie spät ist es?", language="de")
    finally:
        service.close()


def test_an_arena_with_one_model_that_runs_here_says_so_for_typed_prompts_too(tmp_path):
    """Review of session 32: with one model able to run here, an empty prompt was told the
    truth (no battles here) but a typed one still "Try again in a minute", never true."""
    document = REGISTRY["arenas"][0]
    service = _service(tmp_path, {m["id"] for m in document["models"]} - {"m0"})
    try:
        for prompt in ("", "Hello world, typed."):
            with pytest.raises(ArenaError, match="can run on this server") as refused:
                service.new_battle("speech", prompt)
            assert "minute" not in str(refused.value)
    finally:
        service.close()


def test_a_language_with_one_allowed_pair_is_logged_for_the_operator(tmp_path, caplog):
    """German is spoken by m0, m1 and m3; with m3 unable to run here, a visitor who picks
    German knows the two voices before voting (only the sides stay blind). It is still
    offered (a battle is possible), but the start-up log says so, naming the pair."""
    with caplog.at_level("WARNING", logger="arena_core.space.service"):
        service = _service(tmp_path, {"m3"})
        try:
            assert "de" in service.languages("speech")
        finally:
            service.close()
    warned = [r.getMessage() for r in caplog.records if "knows the pair" in r.getMessage()]
    assert len(warned) == 1 and "m0 and m1" in warned[0] and "'de'" in warned[0]
    caplog.clear()
    with caplog.at_level("WARNING", logger="arena_core.space.service"):
        service = _service(tmp_path / "all", set())
        try:
            service.languages("speech")
        finally:
            service.close()
    assert not any("knows the pair" in r.getMessage() for r in caplog.records)
