"""Judges in the registry, judges' votes kept out of the human board, and the log's
all-or-none write of a judge's two verdicts."""

import textwrap

import pytest

from arena_core.leaderboard import BoardParams, board_from_votes
from arena_core.registry import RegistryError, load_registry
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes
from arena_core.votes.schema import VoteError

REGISTRY = """
arenas:
  - id: tts-en
    title: English TTS
    modality: audio
    prompts: [{id: p1, text: "Hello there.", category: en}]
    models:
      - {id: m1, name: M1, family: acme, backend: {type: espeak, voice: en-us}}
      - {id: m2, name: M2, backend: {type: espeak, voice: en-gb}}
  - id: chat
    title: Chat
    modality: text
    prompts: [{id: c1, text: Hi}]
    models:
      - {id: c1, name: C1, backend: {type: openai, base_url: "http://127.0.0.1:1"}}
      - {id: c2, name: C2, backend: {type: openai, base_url: "http://127.0.0.1:1"}}
judges:
  - id: judge/wer
    name: Intelligibility
    kind: intelligibility
    arenas: [tts-en]
    options: {margin: 0.05}
  - {id: judge/llm, name: An LLM, kind: llm, family: acme, arenas: [chat, chat]}
"""


def load(tmp_path, text):
    path = tmp_path / "registry.yaml"
    path.write_text(textwrap.dedent(text))
    return load_registry(path)


def test_judges_and_families_load(tmp_path):
    reg = load(tmp_path, REGISTRY)
    wer, llm = reg.judges
    assert (wer.id, wer.kind, wer.arenas, wer.family) == (
        "judge/wer",
        "intelligibility",
        ("tts-en",),
        None,
    )
    assert wer.option("margin") == 0.05 and wer.option("absent", 7) == 7
    assert llm.arenas == ("chat",) and llm.family == "acme"  # a repeated arena counts once
    assert reg.judge("judge/llm") is llm
    assert reg.arena("tts-en").model("m1").family == "acme"
    assert reg.arena("tts-en").model("m2").family is None
    with pytest.raises(KeyError, match="known: judge/wer, judge/llm"):
        reg.judge("judge/none")
    with pytest.raises(TypeError):
        wer.options["margin"] = 1  # frozen like the rest of the registry


@pytest.mark.parametrize(("change", "message"), [
    (("kind: intelligibility", "kind: vibes"), "unknown judge kind 'vibes'"),
    (("arenas: [tts-en]", "arenas: [tts-fr]"), "no arena 'tts-fr'"),
    (("arenas: [tts-en]", "arenas: []"), "non-empty list of arena ids"),
    (("options: {margin: 0.05}", "options: [0.05]"), "mapping of the kind's settings"),
    (("options: {margin: 0.05}", "colour: red"), "unknown key"),
    (("id: judge/llm", "id: judge/wer"), "duplicate judge id in judges 'judge/wer'"),
    (("name: Intelligibility", "name: ''"), "non-empty string"),
])  # fmt: skip
def test_a_bad_judge_is_refused_with_its_field(tmp_path, change, message):
    with pytest.raises(RegistryError, match=message) as caught:
        load(tmp_path, REGISTRY.replace(*change))
    assert "judges" in str(caught.value)


def test_judges_must_be_a_list(tmp_path):
    with pytest.raises(RegistryError, match="must be a list of judges"):
        load(tmp_path, REGISTRY.split("judges:")[0] + "judges: {id: x}\n")


def cast(log, vote, kind="human", judge=None, a="m1", b="m2"):
    return log.append(arena="tts-en", model_a=a, model_b=b, vote=vote, voter_kind=kind, judge=judge)


def test_judges_votes_never_enter_the_human_board(tmp_path):
    log = VoteLog(tmp_path)
    for _ in range(3):
        cast(log, "a")
    for _ in range(5):  # a judge that always prefers m2
        cast(log, "b", "judge", "judge/wer")
        cast(log, "a", "judge", "judge/wer", a="m2", b="m1")
    cast(log, "a", "judge", "judge/other")
    votes = read_votes(tmp_path)
    human = board_from_votes(votes, "tts-en")
    assert human.votes_used == 3 and human.rows[0].model == "m1"
    judge = board_from_votes(
        votes, "tts-en", params=BoardParams(voter_kind="judge", judge="judge/wer")
    )
    assert judge.votes_used == 10 and judge.rows[0].model == "m2"
    every = board_from_votes(votes, "tts-en", params=BoardParams(voter_kind=None))
    assert every.votes_used == 14
    with pytest.raises(ValueError, match="needs voter_kind='judge'"):
        BoardParams(judge="judge/wer")
    with pytest.raises(ValueError, match="voter_kind must be"):
        BoardParams(voter_kind="robot")


def test_several_votes_are_written_together_or_not_at_all(tmp_path):
    log = VoteLog(tmp_path)
    pair = [dict(arena="tts-en", model_a="m1", model_b="m2", vote="a", voter_kind="judge", judge="j"),
            dict(arena="tts-en", model_a="m2", model_b="m1", vote="b", voter_kind="judge", judge="j")]  # fmt: skip
    seen = []
    first, second = log.append_all(pair, then=lambda v: seen.append(v.vote_id) or v.model_a)
    assert (first, second) == ("m1", "m2") and len(seen) == 2
    bad = [pair[0], dict(pair[1], model_b="m2")]  # the second is one model against itself
    with pytest.raises(VoteError, match="must differ"):
        log.append_all(bad)
    ids = read_votes(tmp_path).column("vote_id").to_pylist()
    assert ids == seen  # the first of the bad pair was not written either
    with pytest.raises(TypeError, match="assigned by the log"):
        log.append_all([dict(pair[0], vote_id="x")])
