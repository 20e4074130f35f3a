"""Judges vote through the visitor's path, behind the operator's token.

A fake judge stands in for the real ones (tests/test_judges_speech.py and
tests/test_judges_llm.py test those); what is tested here is the path: the battle
book, the all-or-none write of both verdicts, the token, and the human board.
"""

import copy
import time

import numpy as np
import pytest
from fakes import REGISTRY, Clock, FakeBackend

from arena_core.backends import ModelPool, PoolSettings
from arena_core.judges.base import Judge, JudgeError, JudgeSpec, Verdict
from arena_core.judges.runner import BackgroundJudges, judge_battles
from arena_core.registry import parse_registry
from arena_core.space.service import ArenaError, ArenaService
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes

TOKEN = "s3cret-judge-token"


def registry():
    data = copy.deepcopy(REGISTRY)
    data["judges"] = [
        {"id": "judge/first", "name": "Prefers A", "kind": "llm", "arenas": ["speech"]},
        {"id": "judge/other", "name": "Elsewhere", "kind": "llm", "arenas": ["elsewhere"]},
    ]
    other = copy.deepcopy(data["arenas"][0])
    other["id"] = "elsewhere"
    data["arenas"].append(other)
    return parse_registry(data)


def make_service(tmp_path, **kwargs):
    reg = registry()
    clock = Clock()
    pools = {}
    for arena in reg.arenas:
        backends = {m.id: FakeBackend(m) for m in arena.models}
        pools[arena.id] = ModelPool(arena, backends, clock=clock, settings=PoolSettings())
    service = ArenaService(reg, pools, VoteLog(tmp_path / "votes"), clock=clock,
                           rng=np.random.default_rng(1), **kwargs)  # fmt: skip
    service.load()
    return service


class PrefersFirst(Judge):
    """Always picks the side shown first: the purest position bias."""

    def judge(self, case):
        return Verdict("a", scores=(1.0, 0.0), reason="first")


class Refuses(Judge):
    def judge(self, case):
        raise JudgeError("does not speak this language")


def rows(tmp_path):
    return read_votes(tmp_path / "votes").table.to_pylist()


def test_a_judge_casts_both_orders_in_one_write(tmp_path):
    service = make_service(tmp_path, judge_token=TOKEN)
    view = service.new_battle("speech")
    first, second = service.judge_vote(view.handle, ("a", "tie"), "judge/first", TOKEN)
    assert (second.model_a, second.model_b) == (first.model_b, first.model_a)
    written = rows(tmp_path)
    assert [r["vote"] for r in written] == ["a", "tie"]
    assert {r["voter_kind"] for r in written} == {"judge"}
    assert {r["judge"] for r in written} == {"judge/first"}
    assert written[0]["battle_id"] == written[1]["battle_id"] == first.battle_id
    assert written[0]["prompt"] == view.prompt and written[0]["category"] == view.category
    assert service.board("speech").votes_used == 0  # never on the human board
    with pytest.raises(ArenaError, match="already voted"):
        service.judge_vote(view.handle, ("a", "a"), "judge/first", TOKEN)
    with pytest.raises(ArenaError, match="already voted"):
        service.vote(view.handle, "a", voter="v")  # nor a visitor's vote after it


@pytest.mark.parametrize(("token", "judge", "verdicts", "message"), [
    (None, "judge/first", ("a", "b"), "judge token"),
    ("", "judge/first", ("a", "b"), "judge token"),
    ("s3cret-judge-tokeN", "judge/first", ("a", "b"), "judge token"),
    (TOKEN, "judge/none", ("a", "b"), "no judge 'judge/none'"),
    (TOKEN, "judge/other", ("a", "b"), "does not judge arena 'speech'"),
    (TOKEN, "judge/first", ("a", "maybe"), "two verdicts"),
    (TOKEN, "judge/first", ("a",), "two verdicts"),
])  # fmt: skip
def test_refused_judge_votes_write_nothing_and_leave_the_battle_open(tmp_path, token, judge,
                                                                      verdicts, message):  # fmt: skip
    service = make_service(tmp_path, judge_token=TOKEN)
    view = service.new_battle("speech")
    with pytest.raises(ArenaError, match=message):
        service.judge_vote(view.handle, verdicts, judge, token)
    assert not (tmp_path / "votes").exists() or rows(tmp_path) == []
    assert service.vote(view.handle, "b", voter="v").counted  # still open for its visitor


def test_without_a_configured_token_no_judge_vote_is_taken(tmp_path):
    service = make_service(tmp_path)
    view = service.new_battle("speech")
    for token in (None, "", "anything"):
        with pytest.raises(ArenaError, match="judge token"):
            service.judge_vote(view.handle, ("a", "b"), "judge/first", token)


def test_the_listening_gate_holds_visitors_not_judges(tmp_path):
    service = make_service(tmp_path, judge_token=TOKEN, listen_share=0.5)
    service.book.delivered = lambda handle, seconds=0.0: type(service.book).delivered(
        service.book, handle, 60.0
    )  # a minute of listening before a visitor may vote
    for_visitor, for_judge = service.new_battle("speech"), service.new_battle("speech")
    with pytest.raises(ArenaError, match="Listen to both clips"):
        service.vote(for_visitor.handle, "a", voter="v")
    assert len(service.judge_vote(for_judge.handle, ("a", "b"), "judge/first", TOKEN)) == 2


def spec(judge_id="judge/first", arenas=("speech",)):
    return JudgeSpec(id=judge_id, name="x", kind="llm", arenas=arenas)


def test_a_run_judges_battles_and_counts_what_it_could_not(tmp_path):
    service = make_service(tmp_path, judge_token=TOKEN)
    seen = []
    run = judge_battles(service, PrefersFirst(spec()), "speech", 5, TOKEN, progress=seen.append)
    assert (run.judged, run.votes, len(seen)) == (5, 10, 5)
    written = rows(tmp_path)
    assert len(written) == 10 and len({r["battle_id"] for r in written}) == 5
    # Position bias in the log: each battle's two verdicts pick the same side, not one model.
    for first, second in zip(written[::2], written[1::2], strict=True):
        assert first["vote"] == second["vote"] == "a" and first["model_a"] == second["model_b"]
    refused = judge_battles(service, Refuses(spec()), "speech", 3, TOKEN)
    assert refused.judged == 0 and sum(refused.not_judged.values()) == 3
    assert len(rows(tmp_path)) == 10
    wrong = judge_battles(service, PrefersFirst(spec()), "speech", 2, "not the token")
    assert wrong.judged == 0 and list(wrong.not_judged) == [
        "Judge votes need the operator's judge token."
    ]
    with pytest.raises(ArenaError, match="does not judge arena 'elsewhere'"):
        judge_battles(service, PrefersFirst(spec()), "elsewhere", 1, TOKEN)


def test_background_judges_judge_until_stopped(tmp_path):
    service = make_service(tmp_path, judge_token=TOKEN)
    judges = BackgroundJudges(service, [PrefersFirst(spec())], TOKEN, pause=0.01)
    judges.start()
    try:
        deadline = time.monotonic() + 60  # generous: a busy machine stalls the judges' thread
        while judges.runs[("judge/first", "speech")].judged < 3 and time.monotonic() < deadline:
            judges._stop.wait(0.01)
    finally:
        judges.stop()
    assert judges.runs[("judge/first", "speech")].judged >= 3
    assert not judges._thread.is_alive()


def test_the_space_starts_only_the_judges_it_can_build(tmp_path, caplog):
    from arena_core.space.config import Settings
    from arena_core.space.startup import start_judges

    service = make_service(tmp_path, judge_token=TOKEN)
    settings = Settings(judges=("judge/none",), judge_token=TOKEN, judge_pause=0.01)
    assert start_judges(service, settings) is None
    assert "judge judge/none not started" in caplog.text
    settings = Settings(judges=("judge/first",), judge_token=TOKEN, judge_pause=0.01)
    # kind llm without a backend block: refused by the kind's option check, logged, not raised
    assert start_judges(service, settings, env={}) is None
    assert "judge judge/first not started" in caplog.text


def test_judges_need_a_token_in_the_environment():
    from arena_core.space.config import ConfigError, Settings

    with pytest.raises(ConfigError, match="ARENA_JUDGES needs ARENA_JUDGE_TOKEN"):
        Settings.from_env({"ARENA_JUDGES": "judge/x", "ARENA_VOTER_SALT": "s"})
    settings = Settings.from_env({"ARENA_JUDGES": " a, b ,", "ARENA_JUDGE_TOKEN": "t",
                                  "ARENA_VOTER_SALT": "s", "ARENA_JUDGE_PAUSE": "0"})  # fmt: skip
    assert settings.judges == ("a", "b") and settings.judge_pause == 0.0
