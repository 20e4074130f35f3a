"""The language of a typed prompt (issue 11): only voices that speak it answer, and its
vote counts on that language's board. ArenaService with the fake models of ``fakes.py``:
m0 and m1 speak English and German, m2 only English, m3 only German."""

import copy

import numpy as np
import pytest
from fakes import REGISTRY, Clock, FakeBackend

from arena_core.backends import ModelPool
from arena_core.registry import parse_registry
from arena_core.space.service import ArenaError, ArenaService
from arena_core.votes.log import VoteLog


def make_service(tmp_path, document=REGISTRY):
    registry = parse_registry(document)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: FakeBackend(m) for m in arena.models}, clock=Clock())
    service = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes"),
                           clock=Clock(), rng=np.random.default_rng(3))  # fmt: skip
    service.load()
    return service


@pytest.fixture
def service(tmp_path):
    service = make_service(tmp_path)
    yield service
    service.close()


def test_the_arena_lists_the_languages_its_models_speak(service):
    assert service.languages("speech") == ("en", "de")


def test_a_typed_prompt_in_german_is_read_only_by_german_voices(service):
    seen = set()
    for _ in range(30):
        view = service.new_battle("speech", "Wie spät ist es?", language="de")
        assert view.category == "de"
        # The fake model says the prompt back with the language it was asked to speak.
        assert view.output_a.text.endswith("[de]") and view.output_b.text.endswith("[de]")
        battle = service.book.close_for_vote(view.handle)
        seen |= {battle.model_a, battle.model_b}
    assert seen == {"m0", "m1", "m3"}  # m2 speaks English only


def test_its_vote_counts_on_that_languages_board(service):
    view = service.new_battle("speech", "Wie spät ist es?", language="de")
    service.vote(view.handle, "a", "voter")
    assert service.board("speech", "de").votes_used == 1
    assert service.board("speech", "en").votes_used == 0


def test_without_a_language_a_typed_prompt_has_no_category_as_before(service):
    view = service.new_battle("speech", "Wie spät ist es?")
    assert view.category is None
    assert service.new_battle("speech", "Wie spät ist es?", language="").category is None


def test_a_prompt_of_the_set_keeps_its_own_language(service):
    assert service.new_battle("speech", "Hello there.", language="de").category == "en"


def test_a_language_the_arena_lacks_is_refused(service):
    with pytest.raises(ArenaError, match="no prompts in language 'fr'"):
        service.new_battle("speech", "Bonjour", language="fr")


@pytest.mark.parametrize(
    "never", [[["m0", "m1", "m3"]], [["m0", "m3"], ["m1", "m3"], ["m0", "m1"]]]
)
def test_a_language_no_two_models_that_may_meet_speak_is_neither_offered_nor_drawn(tmp_path,
                                                                                 never):  # fmt: skip
    """German is spoken by m0, m1 and m3 only: with them never paired, the arena offered
    German and drew its set prompts, and every such battle failed with "Not enough models
    are answering in this arena right now. Try again in a minute", never true."""
    document = copy.deepcopy(REGISTRY)
    document["arenas"][0]["never_paired"] = never
    service = make_service(tmp_path, document)
    try:
        assert service.languages("speech") == ("en",)
        views = [service.new_battle("speech") for _ in range(30)]  # the set prompts: no error
        assert {v.category for v in views} == {"en"}
        with pytest.raises(ArenaError, match="no prompts in language 'de'"):
            service.new_battle("speech", "Wie spät ist es?", language="de")
    finally:
        service.close()
