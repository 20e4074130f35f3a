"""A page session's battles: which battle a vote is for, whatever order the server sees the
clicks in (the browser test of the race is in test_browser_battle_races.py)."""

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from arena_core.page import visit


def opened(state, handle, now=0.0):
    """The visitor asks for a battle and it opens: its number is returned."""
    visit.leave(state, now)
    number = visit.battle_number(state)
    visit.claim(state, handle, "tts-en", "audio")
    return number


def report(number):
    return json.dumps({"a": 1.5, "b": 2.0, "battle": number})


def test_a_vote_is_for_the_battle_on_screen_when_it_was_cast():
    state = {}
    first = opened(state, "h1")
    assert visit.voted_battle(state, visit.reported_battle(report(first)), 1.0) == ("h1", True)
    # N pressed before the vote was handled: the next battle is asked for, then opens.
    visit.leave(state, 2.0)
    assert visit.voted_battle(state, first, 3.0) == ("h1", False)
    visit.claim(state, "h2", "tts-en", "audio")
    second = visit.battle_number(state)
    assert second == first + 1
    assert visit.voted_battle(state, first, 3.0) == ("h1", False)  # not the new battle
    assert visit.voted_battle(state, second, 3.0) == ("h2", True)


def test_a_left_battle_takes_a_vote_only_for_a_while_and_only_once():
    state = {}
    first = opened(state, "h1")
    opened(state, "h2", now=10.0)
    assert visit.voted_battle(state, first, 10.0 + visit.LEFT_GRACE + 0.1) == (None, False)
    assert visit.voted_battle(state, first, 9.0) == (None, False)  # a clock gone backwards
    visit.counted(state, "h1")
    assert state["votes"] == 1 and visit.voted_battle(state, first, 11.0) == (None, False)


def test_the_last_few_battles_left_unvoted_are_remembered():
    state = {}
    numbers = [opened(state, f"h{k}") for k in range(visit.LEFT_KEPT + 2)]
    assert visit.voted_battle(state, numbers[0], 0.0) == (None, False)  # beyond LEFT_KEPT
    for k in range(2, visit.LEFT_KEPT + 1):
        assert visit.voted_battle(state, numbers[k], 0.0) == (f"h{k}", False)
    state["voted"] = True  # the battle on screen was voted on: leaving it adds nothing
    opened(state, "next")
    assert [x["handle"] for x in state["left"]][-1] == f"h{visit.LEFT_KEPT}"


def test_a_vote_queued_behind_two_clicks_still_counts():
    """Found by review: A (the vote waits in the queue), N, then N again, Enter or another
    arena while the next battle is made: the second leave forgot the first battle."""
    for shown in (None, "tts-ja"):
        state = {}
        first = opened(state, "h1")
        visit.leave(state, 1.0)  # N: battle 2 asked for
        visit.leave(state, 2.0, shown=shown)  # again, before battle 2 opened
        assert visit.voted_battle(state, first, 3.0) == ("h1", False)


def test_a_vote_that_names_no_battle_is_for_the_battle_on_screen():
    """An API client, or a page from before the battle numbers, sends none."""
    state = visit.claim(None, "h1", "tts-en", "audio")
    assert visit.voted_battle(state, None, 0.0) == ("h1", True)
    assert visit.voted_battle(state, 7, 0.0) == (None, False)  # a number never shown
    assert visit.voted_battle(None, None, 0.0) == (None, True)


@given(st.one_of(st.none(), st.integers(), st.text(max_size=300), st.binary(max_size=50),
                 st.builds(json.dumps, st.recursive(
                     st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                     lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=8))))  # fmt: skip
def test_any_report_gives_a_battle_number_or_none(raw):
    number = visit.reported_battle(raw)
    assert number is None or (type(number) is int)


def test_the_report_parser_keeps_integers_only():
    assert visit.reported_battle(json.dumps({"battle": 3})) == 3
    for junk in (True, 3.0, "3", None, [3]):
        assert visit.reported_battle(json.dumps({"battle": junk})) is None
    assert visit.reported_battle("[" * 100_000) is None
    assert visit.reported_battle(json.dumps({"battle": 3, "pad": "x" * 300})) is None


def test_the_arena_shown_follows_the_picker_and_the_battles():
    state = {}
    opened(state, "h1")
    assert visit.shown_arena(state) == "tts-en"
    visit.leave(state, 0.0, shown="tts-multilingual")  # another arena picked
    assert visit.shown_arena(state) == "tts-multilingual"
    assert visit.voted_battle(state, 1, 0.0) == ("h1", False)  # the vote cast before counts


def test_an_arena_header_reads_the_session_count_after_its_board():
    """The arena picked while a vote waits: its header's board can take a while (a refit on
    a busy server), and the vote, counted meanwhile, sends its header first. The picked
    arena's header must not then overwrite it with the count from before the vote (a
    browser test caught "you: 1 this session" missing under load)."""
    from types import SimpleNamespace

    from arena_core.page.arena_tab import ArenaPage
    from arena_core.registry import load_registry

    root = Path(__file__).resolve().parents[1]
    arena = load_registry(root / "registry.yaml").arena("tts-multilingual")
    state = {"votes": 0}

    totals = iter([7, 8])

    def board(arena_id):  # the vote is counted (and joins the board) while it is read
        state["votes"] = 1
        return SimpleNamespace(votes_used=next(totals))

    status = SimpleNamespace(available=True)
    service = SimpleNamespace(
        languages=lambda arena_id: ["en", "de"],
        board=board,
        arena=lambda arena_id: arena,
        progress=SimpleNamespace(done=True),
        pools={"tts-multilingual": SimpleNamespace(status=lambda: {"m": status})},
    )
    request = SimpleNamespace(headers={"accept-language": "de-DE"})
    header, _ = ArenaPage(service).show_arena("tts-multilingual", state, request)
    assert "you: <b>1</b> this session" in header
    assert "8 votes" in header  # not the total from before the vote either


def test_a_typed_prompt_on_the_model_page_is_text_only():
    """A prompt a visitor typed is shown to everyone on the model page: neither HTML nor
    Markdown in it may render (``![](url)`` would make each reader's browser fetch it)."""
    from html.parser import HTMLParser

    from arena_core.analysis.model_report import RecentBattle
    from arena_core.page.model_audio import HeardBattle, heard_label

    typed = '![t](http://127.0.0.1:9/t.png) **x** <img src="y"> [l](javascript:alert(1)) &amp;'
    battle = RecentBattle("v1", "2026-12-01T10:00:00.000000Z", None, typed, None, "m2", "a", "win")
    label = heard_label(HeardBattle(battle, None, None), {"m2": "Model <2>"})

    class Parts(HTMLParser):
        tags, text = [], ""

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

        def handle_data(self, data):
            self.text += data

    parts = Parts(convert_charrefs=True)
    parts.feed(label)
    assert parts.tags == ["p", "b"]  # the line and its time, nothing from the prompt
    assert f"“{typed}”" in parts.text and "Model <2>" in parts.text


def test_a_battles_clips_start_at_zero_and_a_cleared_clip_is_not_seeked():
    """Gradio keeps each player's position bound across values and seeked a new clip to where
    the last one stopped; that seek, overlapped by another, left Chromium's player seeking
    for good now and then (``test_browser_clip_start`` covers the page's side). A battle's
    clips come with the position 0; a clip cleared keeps its position (0 would seek the old
    clip as it leaves)."""
    from arena_core.page.arena_tab import ArenaPage

    page = ArenaPage(None)
    opened = page.opened("audio", ["a.wav", "b.wav", None, None, None, None], 1)[-6:-4]
    assert [p.get("playback_position") for p in opened] == [0, 0]
    assert [p["label"] for p in opened] == ["Clip A", "Clip B"]
    for step, cleared in {"begin": page.begin()[-2:], "idle": page.idle()[-6:-4]}.items():
        assert [p["value"] for p in cleared] == [None, None], step
        assert not [p for p in cleared if "playback_position" in p], step
        assert [p["label"] for p in cleared] == ["Clip A", "Clip B"], step


def test_a_battle_answered_twice_counts_once_for_the_session():
    """The service answers a vote sent again with the vote it recorded (a page whose answer
    was lost sees it); when two presses both come back with it, the session's count grew by
    two (found by the day's review). Each battle counts once, for the last few battles."""
    state = {}
    assert visit.counted(state, "h1") and not visit.counted(state, "h1")
    assert state["votes"] == 1
    for k in range(2, visit.COUNTED_KEPT + 2):
        assert visit.counted(state, f"h{k}")
    assert state["votes"] == visit.COUNTED_KEPT + 1
    assert not visit.counted(state, f"h{visit.COUNTED_KEPT + 1}")
    assert len(state["counted"]) == visit.COUNTED_KEPT  # bounded
