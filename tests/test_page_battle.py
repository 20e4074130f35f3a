"""The Arena tab's pieces (arena_core.page.battle): what is offered, the header, the
language choice, the sides before and after the vote, and the gate over the buttons."""

import re

import pytest

from arena_core.backends.pool import ModelStatus
from arena_core.leaderboard import Board, LeaderboardRow
from arena_core.page import assets, battle
from arena_core.registry import Arena, BackendSpec, Model
from arena_core.space.service import Reveal, Side


def status(model_id, available=True, reason=""):
    return ModelStatus(model_id, available, reason, None, None, 0, None)


def arena(arena_id="ar", title="Test arena", description=None):
    model = Model("m/a", "Alpha", BackendSpec("fake"), url="https://example.org/alpha")
    return Arena(arena_id, title, "audio", (model,), (), description=description)


def test_only_arenas_with_two_runnable_models_are_offered_and_the_others_say_why():
    arenas = [arena("speech"), arena("chat", "Chat"), arena("solo", "Solo")]
    statuses = {
        "speech": {"a": status("a"), "b": status("b"), "c": status("c", False, "x not on PATH")},
        "chat": {"q": status("q", False, "HF_TOKEN not set"), "l": status("l", False, "HF_TOKEN not set")},
        "solo": {"a": status("a"), "b": status("b", False, "kokoro not installed (pip install k)")},
    }  # fmt: skip
    offer = battle.offer(arenas, statuses)
    assert [a.id for a in offer.offered] == ["speech"]
    assert [(a.id, why) for a, why in offer.absent] == [
        ("chat", "Needs a Hugging Face token: see About."),
        ("solo", "Only one of its models can run here: see About."),
    ]
    note = battle.absent_note(offer.absent)
    assert note == ("**Chat** is not offered here. Needs a Hugging Face token: see About.\n\n"
                    "**Solo** is not offered here. Only one of its models can run here: see About.")  # fmt: skip


@pytest.mark.parametrize(
    ("reasons", "why"),
    [
        (["HF_HUB_OFFLINE is set"], "Its models are hosted, and this server runs offline: see About."),
        (["flite not on PATH (apt-get install flite)"], "Its engines are not installed on this server: see About."),
        (["voice file /x not found"], "Its models cannot run on this server right now: see About."),
    ],
)  # fmt: skip
def test_why_an_arena_is_not_here_in_one_friendly_line(reasons, why):
    assert battle.why_not_here([status(f"m{k}", False, r) for k, r in enumerate(reasons)]) == why


def test_the_pitch_is_the_descriptions_first_clause():
    described = arena(description="Classic voices that run on a CPU: eSpeak NG (formant) and more.")
    assert battle.pitch(described) == "Classic voices that run on a CPU"
    assert battle.pitch(arena(description="Japanese sentences of ten kinds (short, long). Five voices.")) == (
        "Japanese sentences of ten kinds"
    )  # fmt: skip
    assert battle.pitch(arena(description=None)) == "Test arena"


def test_the_header_counts_models_votes_and_the_visitors_votes():
    html = battle.header_html(arena(title="A <b> arena"), 9, 1234, 3)
    assert "A &lt;b&gt; arena" in html and "9 models" in html and "1,234 votes" in html
    assert "you: <b>3</b> this session" in html
    assert "1 vote<" in battle.header_html(arena(), 2, 1, 0)  # singular
    assert "this session" not in battle.header_html(arena(), 2, 1, 0)  # nothing cast yet
    assert "votes loading" in battle.header_html(arena(), 2, None, 0)


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("de-DE,de;q=0.9,en;q=0.8", "de"),
        ("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7", "fr"),
        ("ja;q=0.2, it;q=0.5", "it"),  # by weight, not by order
        ("pt-BR", "en"),  # not offered: the arena's first language
        (None, "en"),
        ("de;q=bogus, es", "es"),  # a malformed part is skipped
    ],
)
def test_the_prompt_language_follows_the_browser_else_the_arenas_first(header, chosen):
    assert battle.pick_language(header, ("en", "de", "es", "fr", "it")) == chosen


def test_an_arena_without_languages_has_no_choice():
    assert battle.pick_language("de", ()) is None
    assert battle.language_choices(("en", "de", "xx")) == [
        ("English", "en"), ("German (Deutsch)", "de"), ("xx", "xx")
    ]  # fmt: skip


def test_board_categories_read_as_words():
    assert battle.category_choices(("short", "tongue_twisters"), ()) == [
        ("Short", "short"), ("Tongue twisters", "tongue_twisters")
    ]  # fmt: skip
    assert battle.category_choices(("en", "de"), ("en", "de")) == [
        ("English", "en"), ("German (Deutsch)", "de")
    ]  # fmt: skip


def test_sides_before_the_vote_carry_a_letter_and_a_state_only():
    head = battle.side_head("A", "idle")
    assert 'data-side="A"' in head and 'data-state="idle"' in head and "not heard yet" in head
    assert "side-state" not in battle.side_head("B", "")  # no battle: no state


def test_the_gate_explains_what_unlocks_the_buttons():
    locked = battle.gate_html("open", "audio")
    assert 'data-stage="open"' in locked and 'data-modality="audio"' in locked
    assert "heard <b>both clips</b>" in locked and "Play A then B" in locked
    assert "Compare both, then vote" in battle.gate_html("open", "text")
    assert "Next battle" in battle.gate_html("voted") and "New battle" in battle.gate_html("idle")
    for key in ("A", "B", "T", "X", "N"):
        assert f"<kbd>{key}</kbd>" in locked
    assert "data-wait" not in locked  # only a refusal by the server's gate carries its wait
    assert 'data-wait="3.250"' in battle.gate_html("open", "audio", wait=3.25)
    # The vote the wait holds back, for the page script to send once it is over.
    held = battle.gate_html("open", "audio", wait=3.25, battle=2, pending="tie")
    assert 'data-pending="tie"' in held and 'data-battle="2"' in held
    assert "data-pending" not in battle.gate_html("open", "audio", pending="<b>")


def test_a_typed_prompt_the_service_would_refuse_is_known_before_a_battle_is_asked_for():
    assert (
        battle.prompt_refusal("x" * 11, 10) == "The prompt is 11 characters long; the limit is 10."
    )
    assert battle.prompt_refusal("a  " * 4 + "a", 10) is None  # spaces collapse, as served
    assert "letter or digit" in battle.prompt_refusal("👍👍", 10)
    assert battle.prompt_refusal("   ", 10) is None and battle.prompt_refusal(None, 10) is None


def test_the_pages_script_binds_the_keys_the_page_shows():
    script = assets.script()
    bound = dict(re.findall(r"(\w): \"(\w+)\"", re.search(r"VOTE_KEYS = \{([^}]*)\}", script)[1]))
    assert {key.upper(): vote for key, vote in bound.items()} == {
        key: vote for vote, key in battle.VOTE_KEYS.items()
    }
    assert "window.arena = {" in script and "playBoth()" in script


def row(model_id, rank, worst, battles=10):
    return LeaderboardRow(rank=rank, rank_worst=worst, component=1 if battles else None,
                          model=model_id.upper(), model_id=model_id, params=None, params_m=None,
                          rating=1000.0, ci_low=None, ci_high=None, elo=1000.0,
                          elo_per_m_params=None, battles=battles, wins=0, losses=0, ties=0,
                          both_bad=0, win_rate=None, status="provisional",
                          provenance="arena_thin" if battles else None, votes_share=None,
                          prior_rating=None, prior_source=None, prior_shift=None,
                          available=True, note=None)  # fmt: skip


def test_the_reveal_names_links_highlights_and_ranks():
    board = Board("ar", None, "bt", (row("m/a", 1, 2), row("m/b", 1, 3), row("m/c", 3, 3),
                                     row("m/d", None, None, 0)), 15, {})  # fmt: skip
    reveal = Reveal(
        "a", Side("m/a", "Alpha <1>", 1000.0, 1016.4), Side("m/b", "Beta", 1000.0, 983.6), True
    )
    model = Model("m/a", "Alpha <1>", BackendSpec("fake"), url="https://example.org/a?x=1&y=2")
    a = battle.reveal_head("A", reveal.a, model, reveal.vote, board)
    b = battle.reveal_head("B", reveal.b, None, reveal.vote, board)
    assert "revealed picked" in a and "Your pick" in a and "Your pick" not in b
    assert 'href="https://example.org/a?x=1&amp;y=2"' in a and "Alpha &lt;1&gt;" in a
    assert "Elo 1000 → 1016" in a and '<span class="delta up">+16</span>' in a
    assert '<span class="delta down">-16</span>' in b
    assert "now #1–2 of 3" in a and "now #1–3 of 3" in b  # three models have played
    tie = battle.reveal_head("B", reveal.b, None, "tie", board)
    assert "revealed tie" in tie and ">Tie<" in tie
    assert "revealed bad" in battle.reveal_head("A", reveal.a, None, "both_bad", board)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", " java\nscript:x"])
def test_the_reveal_links_only_an_http_url(url):
    """The loader refuses other URLs; a Model built another way is not linked either."""
    board = Board("ar", None, "bt", (row("m/a", 1, 1),), 15, {})
    side = Side("m/a", "Alpha", 1000.0, 1016.4)
    head = battle.reveal_head(
        "A", side, Model("m/a", "Alpha", BackendSpec("fake"), url=url), "a", board
    )
    assert "href" not in head and "Alpha" in head


def test_the_vote_line_thanks_and_passes_on_notes():
    counted = Reveal("tie", Side("a", "A", 1.0, 2.0), Side("b", "B", 1.0, 0.0), True)
    assert (
        battle.vote_status(counted, 4) == "You voted **Tie**. That makes 4 this session: thank you!"
    )
    kept = Reveal(
        "a", Side("a", "A", None, None), Side("b", "B", None, None), False, "Over the limit."
    )
    assert battle.vote_status(kept, 5) == "You voted **A is better**. Over the limit."
