"""A visitor's whole visit in a real browser (Debian's Chromium driven by Playwright), with a
full-page screenshot at each step in tests/output/screenshots/ for a reviewer to look at.

The app is the real one with the default registry (conftest ``running_app``): real speech
engines, hosted models unavailable for want of a token. The clips play at four times their
speed: the page counts the share of a clip that was heard, not the seconds it took.
"""

import re
import time

import pytest
from browser import GATE_SHARE, LAPTOP, Visit, expect, names_and_ids

from arena_core.votes.read import read_votes

pytestmark = pytest.mark.browser

#: A short sentence of the English set (a typed prompt equal to one counts as that one).
SHORT = "The kettle is already boiling."
#: A short sentence of the Japanese set: two Kokoro voices answer it in about a second.
JAPANESE = "お湯が沸きましたよ。"
GERMAN = "Guten Morgen, der Zug nach Hamburg fährt heute später ab."


def last_vote(running_app) -> dict:
    votes = read_votes(running_app.settings.votes_dir)
    return {k: votes.column(k).to_pylist()[-1] for k in ("arena", "model_a", "model_b", "vote",
                                                          "category", "prompt")}  # fmt: skip


def test_a_whole_visit(running_app, browser):
    service = running_app.service
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "visit")
    page = visit.page
    visit.arrive(running_app.url)

    # Arrival: the arena's pitch and counts; only arenas that can run here are offered.
    header = page.locator("#arena-header")
    expect(header).to_contain_text("Classic and neural speech synthesizers")
    expect(
        page.get_by_text("Chat is not offered here. Needs a Hugging Face token: see About.")
    ).to_be_visible()
    visit.shot("arrival")
    page.locator("#arena-in input").click()
    offered = [t.split("\n")[-1] for t in page.get_by_role("option").all_inner_texts()]
    assert offered == ["English text-to-speech", "Multilingual text-to-speech",
                       "Japanese text-to-speech"]  # fmt: skip
    page.keyboard.press("Escape")
    before = service.board("tts-en").votes_used

    # A battle from the keyboard (N), on a short sentence of the set. Its gate holds the vote
    # until both clips are heard; the server's gate, on here, until a whole listen's time
    # has passed: four times faster is too fast for it.
    page.locator("#prompt-in textarea").fill(SHORT)
    service.listen_share = GATE_SHARE
    try:
        visit.key("n")
        visit.battle_ready()
        html = visit.arena_html()
        assert not [x for x in names_and_ids(service, "tts-en") if x in html]  # blind
        for vote in ("a", "b", "tie", "both_bad"):
            expect(page.locator(f"#vote-{vote}")).to_have_attribute("aria-disabled", "true")
        expect(page.locator("#side-A .side-state")).to_have_text("not heard yet")
        visit.key("a")  # locked: the gate says why, nothing is sent
        expect(page.locator("#gate .gate")).to_have_class(re.compile("nudge"))
        visit.shot("battle-locked")
        visit.listen_to_both()  # Play A then B (the P key)
        expect(page.locator("#side-A .side-state")).to_have_text("heard ✓")
        expect(page.locator("#side-B .side-state")).to_have_text("heard ✓")
        expect(page.locator("#vote-a")).not_to_have_attribute("aria-disabled", "true")
        visit.key("a")
        # The server refuses: the gate closes again and counts its seconds down, and the
        # held vote goes by itself once they are over (test_browser_held_vote.py).
        gate = page.locator("#gate .gate")
        expect(gate).to_have_attribute("data-ready", "wait", timeout=20_000)
        open_at = time.monotonic() + int(re.search(r"sent in (\d+) s", gate.inner_text())[1])
    finally:
        service.listen_share = 0.0
    visit.shot("gate-refusal")

    # One clip at a time: starting B pauses A.
    page.locator("#audio-A button.play-pause-button").click()
    expect(page.locator("#side-A .side-state")).to_have_text("playing…")
    page.locator("#audio-B button.play-pause-button").click()
    expect(page.locator("#side-B .side-state")).to_have_text("playing…")
    assert visit.paused("A")
    visit.shot("one-clip-at-a-time")
    page.wait_for_timeout(max(0.0, open_at + 1 - time.monotonic()) * 1000)

    # The reveal: names and links on both sides, the chosen one highlighted, one Next battle.
    expect(page.locator("#next-battle")).to_be_visible(timeout=20_000)
    expect(page.locator("#new-battle")).to_be_hidden()
    logged = last_vote(running_app)
    assert logged["vote"] == "a" and logged["arena"] == "tts-en"
    arena = service.registry.arena("tts-en")
    for side, model_id in (("A", logged["model_a"]), ("B", logged["model_b"])):
        head = page.locator(f"#side-{side}")
        expect(head).to_contain_text(arena.model(model_id).name)
        expect(head).to_contain_text(re.compile(r"Elo \d+ → \d+"))
        expect(head.locator("a")).to_have_attribute("href", arena.model(model_id).url)
    expect(page.locator("#side-A .side-head.picked")).to_contain_text("Your pick")
    expect(page.locator("#side-B .side-head")).not_to_have_class(re.compile("picked"))
    expect(header).to_contain_text("you: 1 this session")
    visit.shot("reveal")

    # The board: one more vote, both names, badges instead of italics, charts with votes.
    page.get_by_role("tab", name="Leaderboard").click()
    summary = page.locator("#board-summary")
    counted = f"{before + 1:,} vote{'' if before == 0 else 's'} counted"
    expect(summary).to_contain_text(counted, timeout=20_000)
    board = page.locator("#board-table")
    for model_id in (logged["model_a"], logged["model_b"]):
        expect(board).to_contain_text(arena.model(model_id).name)
    expect(board.locator(".badge.provisional").first).to_be_visible()
    expect(board).to_contain_text("Not yet rated")
    expect(board.locator("th", has_text="Rank")).to_have_count(1)
    for chart in ("#chart-ratings", "#chart-wins", "#chart-battles"):
        expect(page.locator(f"{chart} .main-svg").first).to_be_visible(timeout=20_000)
    box = board.locator("table").bounding_box()
    assert box["x"] + box["width"] <= LAPTOP["width"]  # the full table, no sideways scroll...
    assert board.locator(".board-wrap").evaluate(  # ...and no scroll inside its box either
        "e => e.scrollHeight <= e.clientHeight + 1 && e.scrollWidth <= e.clientWidth + 1"
    )
    visit.shot("board")
    # Flite's BSD-style licence is read and recognised: an open licence. "Other licence"
    # lists the rest (none of the shipped models), never calling them closed.
    weights = page.locator("#board-weights")
    weights.get_by_text("Other licence", exact=True).click()
    expect(board).to_contain_text("No model matches these filters.")
    weights.get_by_text("Open licence", exact=True).click()
    expect(board).to_contain_text(arena.model("flite/kal").name)
    page.locator("#board-tab").get_by_text("All", exact=True).click()
    expect(board).to_contain_text(arena.model(logged["model_a"]).name)

    # About, for visitors and model authors.
    page.get_by_role("tab", name="About").click()
    about = page.locator("#about-tab")
    for heading in ("What the labels mean", "What is published, and what is never stored",
                    "Add a model"):  # fmt: skip
        expect(about.get_by_role("heading", name=heading)).to_be_visible()
    expect(about).to_contain_text("Needs a Hugging Face token")
    assert "apt-get" not in about.inner_text()
    visit.shot("about")

    # A second arena, with a typed prompt in German: only voices that speak it answer.
    page.get_by_role("tab", name="Arena").click()
    visit.pick("#arena-in", "Multilingual text-to-speech")
    expect(header).to_contain_text("Multilingual text-to-speech")
    expect(page.locator("#language-in input")).to_have_value("English")  # the browser's (en-US)
    visit.pick("#language-in", "German (Deutsch)")
    page.locator("#prompt-in textarea").fill(GERMAN)
    page.locator("#new-battle").click()
    visit.battle_ready()
    expect(page.locator("#prompt-shown textarea")).to_have_value(GERMAN)
    visit.shot("typed-german")
    visit.listen_to_both()
    visit.key("b")
    expect(page.locator("#side-B .side-head.picked")).to_be_visible(timeout=20_000)
    logged = last_vote(running_app)
    assert logged["arena"] == "tts-multilingual" and logged["category"] == "de"
    assert logged["prompt"] == GERMAN

    # One Japanese battle.
    visit.pick("#arena-in", "Japanese text-to-speech")
    page.locator("#prompt-in textarea").fill(JAPANESE)
    page.locator("#new-battle").click()
    visit.battle_ready()
    assert not [x for x in names_and_ids(service, "tts-ja") if x in visit.arena_html()]
    visit.listen_to_both()
    visit.key("t")
    expect(page.locator("#side-A .side-head.tie")).to_be_visible(timeout=20_000)
    expect(page.locator("#side-B .side-head.tie")).to_be_visible()
    logged = last_vote(running_app)
    assert logged["arena"] == "tts-ja" and logged["vote"] == "tie"
    expect(header).to_contain_text("you: 3 this session")
    visit.shot("japanese-reveal")
    page.close()
