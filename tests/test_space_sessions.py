"""What the service writes in schema 4's fields: the session and the vote's order in it
(across restarts), the listening times it keeps, the clips' lengths, the prompt's origin,
and ``counted``/``count_reason`` against ``flags``."""

import math

from fakes import Clock
from hypothesis import given, settings
from hypothesis import strategies as st
from test_service import logged, make_service
from test_space_style import build

from arena_core.integrity.identity import session_hash, voter_hash
from arena_core.space.sessions import (
    LISTEN_BOUND,
    SessionCounter,
    listen_report,
    listen_seconds,
)
from arena_core.votes.read import read_votes


def vote(service, choice="a", voter="v", session=None, prompt="Hello there.", listened=None):
    view = service.new_battle("speech", prompt)
    return service.vote(view.handle, choice, voter=voter, session=session, listened=listened)


def test_the_session_counter_counts_restores_and_forgets():
    clock = Clock()
    counter = SessionCounter(memory=100.0, clock=clock)
    assert [counter.next("s") for _ in range(3)] == [1, 2, 3]
    assert counter.next("t") == 1
    counter.restore({"s": (2, 5.0), "t": (4, 5.0), "u": (7, 5.0), "old": (9, 100.0)})
    # s keeps its own larger count (votes being written); t and u take the log's; old is gone.
    assert (counter.next("s"), counter.next("t"), counter.next("u"), counter.next("old")) == (
        4, 5, 8, 1)  # fmt: skip
    counter.release("s", 4)  # a vote that was not written gives its rank back
    assert counter.next("s") == 4
    counter.release("s", 2)  # not the last: nothing to give back
    assert counter.next("s") == 5
    clock.now += 101
    assert counter.next("x") == 1 and len(counter) == 1  # idle sessions swept


def test_two_sessions_and_a_restart_keep_each_votes_order(tmp_path):
    service, _ = make_service(tmp_path, rate_limit=1000)
    for session in ("s1", "s2", "s1", "s1", "s2"):
        vote(service, session=session)
    vote(service)  # no session (a request without one): neither field
    service.close()
    again, _ = make_service(tmp_path, rate_limit=1000)  # a new process on the same folder
    vote(again, session="s2")
    vote(again, session="s1")
    rows = logged(tmp_path)
    rows.sort(key=lambda r: r["ts"])
    got = [(r["session_id"], r["session_order"]) for r in rows]
    assert got == [("s1", 1), ("s2", 1), ("s1", 2), ("s1", 3), ("s2", 2), (None, None),
                   ("s2", 3), ("s1", 4)]  # fmt: skip


def test_a_vote_cast_before_the_replay_is_done_has_no_order_but_counts_for_the_next(tmp_path):
    service, _ = make_service(tmp_path, rate_limit=1000)
    vote(service, session="s")
    service.close()
    # The start-up replay has not run yet. (This test once ran a second replay on a service
    # that had replayed already, which no process does: each reads the earlier shards once,
    # and now adds this run's votes to their counts.)
    again, _ = make_service(tmp_path, rate_limit=1000, load=False)
    vote(again, session="s")
    again.load()  # the replay ends (the vote above is in this process's shard, not read)
    vote(again, session="s")
    rows = sorted(logged(tmp_path), key=lambda r: r["ts"])
    assert [(r["session_id"], r["session_order"]) for r in rows] == [
        ("s", 1), ("s", None), ("s", 3)]  # fmt: skip


def test_prompt_origin_comes_from_the_battle_record(tmp_path):
    service, _ = make_service(tmp_path)
    vote(service, prompt="Hello there.")  # one of the set, typed or not
    vote(service, prompt="Words of my own.", voter="w")
    vote(service, prompt=None, voter="x")  # a prompt drawn from the set
    rows = sorted(logged(tmp_path), key=lambda r: r["ts"])
    assert [(r["prompt_origin"], r["prompt_id"] is not None) for r in rows] == [
        ("set", True), ("typed", False), ("set", True)]  # fmt: skip


def test_counted_and_count_reason_agree_with_flags(tmp_path):
    service, _ = make_service(tmp_path, rate_limit=2)
    reveals = [vote(service, voter="v") for _ in range(3)]
    rows = sorted(logged(tmp_path), key=lambda r: r["ts"])
    assert [(r["flags"], r["counted"], r["count_reason"]) for r in rows] == [
        ([], True, None), ([], True, None), (["rate_limited"], False, "rate_limited")]  # fmt: skip
    assert [r.counted for r in reveals] == [True, True, False]


def test_audio_votes_carry_the_clips_lengths_and_only_plausible_listening_times(tmp_path):
    service, _ = build(tmp_path)
    reports = ['{"a": 1.5, "b": 0}', None, '{"a": -1, "b": "x"}', "not json", '{"a": 1e9}',
               '{"a": NaN, "b": Infinity}', "[1, 2]"]  # fmt: skip
    for report in reports:
        view = service.new_battle("tts")
        service.vote(view.handle, "a", voter="v", session="s", listened=report)
    service.close()
    rows = read_votes(tmp_path / "votes").table.to_pylist()
    for row in rows:
        # Both clips as delivered, padded to one length that covers the longer speech.
        assert row["clip_a_s"] == row["clip_b_s"]
        assert row["clip_a_s"] >= max(row["model_a_duration_s"], row["model_b_duration_s"])
    heard = [(r["listen_a_s"], r["listen_b_s"]) for r in rows]
    assert heard == [(1.5, 0.0)] + [(None, None)] * 6
    assert [r["session_order"] for r in rows] == list(range(1, 8))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.booleans(), st.integers(-10, 10**9), st.floats(), st.text(max_size=5)),
       st.one_of(st.none(), st.floats(0.01, 600)))  # fmt: skip
def test_a_kept_listening_time_is_a_plausible_number_of_seconds(value, clip):
    kept = listen_seconds(value, clip)
    if kept is None:
        plausible = (clip is not None and type(value) in (int, float) and math.isfinite(value)
                     and 0 <= value <= LISTEN_BOUND * clip)  # fmt: skip
        assert not plausible
    else:
        assert 0 <= kept <= LISTEN_BOUND * clip + 0.0005 and kept == round(float(value), 3)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=250), st.binary(max_size=20),
                 st.dictionaries(st.sampled_from("abc"), st.floats()).map(str)))  # fmt: skip
def test_any_report_is_read_without_error(raw):
    a, b = listen_report(raw)
    assert (a is None and b is None) or isinstance(raw, str)


def test_a_session_hash_is_the_voter_hmac_of_a_distinct_identity():
    assert session_hash("salt", None) is None and session_hash("salt", "") is None
    assert session_hash("salt", "abc") == voter_hash("salt", "session:abc")
    assert session_hash("salt", "abc") != voter_hash("salt", "abc")
    assert session_hash("salt", "abc") != session_hash("pepper", "abc")
    assert len(session_hash("salt", "abc")) == 20


def test_text_votes_have_no_clip_lengths_nor_listening_times(tmp_path):
    service, _ = make_service(tmp_path)
    vote(service, listened='{"a": 1, "b": 2}')
    (row,) = logged(tmp_path)
    assert [row[k] for k in ("clip_a_s", "clip_b_s", "listen_a_s", "listen_b_s")] == [None] * 4
