"""The Arena tab's header and language when the visitor picks arenas quicker than the server
answers, in Debian's Chromium. The server's answers are held in the browser (``HeldCalls``),
so the order a busy server can give happens on every run.
"""

import pytest
from browser import LAPTOP, PAGE_LOAD, HeldCalls, Visit, expect

pytestmark = pytest.mark.browser


def header_of(arena: str):
    """The call that draws the Arena tab's header and language choice for ``arena``: its
    inputs are the arena and the session's state (which the page sends as null)."""
    return lambda b: b.get("data") == [arena, None]


def left_for(arena: str):
    """The answer to the call that clears the battle for ``arena`` (its inputs: the state,
    sent as null, then the arena): the first of the pick's handlers, which Gradio runs in
    turn, so the header's comes right after it (sent, deferred or dropped)."""
    return lambda r: (
        "/run/predict" in r.url and ((r.request.post_data_json or {}).get("data") == [None, arena])
    )


def test_an_arena_picked_back_while_the_last_header_is_on_its_way_gets_its_header(
    running_app, browser
):
    """Multilingual picked, then English again before Multilingual's header came: the event
    that draws the header ran once (Gradio's "once" drops a trigger while the event runs),
    so the page kept Multilingual's header and its language choice under English, and
    every New battle was refused ("Arena 'tts-en' has no prompts in language 'en'")."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-arena-back")
    visit.arrive(running_app.url)
    page = visit.page
    calls = HeldCalls(visit, multilingual=header_of("tts-multilingual"))
    visit.pick("#arena-in", "Multilingual text-to-speech")
    calls.wait_held("multilingual")
    with page.expect_response(left_for("tts-en")):
        visit.pick("#arena-in", "English text-to-speech")
    page.wait_for_timeout(300)  # the page passes on to the header's handler
    calls.release("multilingual")
    page.unroute(HeldCalls.PATTERN)
    page.wait_for_timeout(1000)  # a deferred answer would have come by now
    visit.shot("english-again")
    header = page.locator("#arena-header")
    expect(page.locator("#arena-in input")).to_have_value("English text-to-speech")
    expect(page.locator("#language-in")).to_be_hidden()
    expect(header).to_contain_text("English text-to-speech")
    expect(header).not_to_contain_text("Multilingual")
    visit.key("n")
    visit.battle_ready()
    page.close()


def test_an_arena_picked_before_the_pages_first_header_came_gets_its_header(running_app, browser):
    """Multilingual picked while the page's load was still drawing English's header (a
    busy server): the pick's own header was never asked for, so English's stayed above the
    Multilingual arena, with no language to pick."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-arena-at-load")
    page = visit.page
    calls = HeldCalls(visit, load=header_of("tts-en"))
    page.goto(running_app.url)
    calls.wait_held("load")
    expect(page.locator("#arena-in input")).to_be_visible(timeout=PAGE_LOAD)
    with page.expect_response(left_for("tts-multilingual")):
        visit.pick("#arena-in", "Multilingual text-to-speech")
    page.wait_for_timeout(300)
    calls.release("load")
    page.unroute(HeldCalls.PATTERN)
    page.wait_for_timeout(1000)
    visit.shot("multilingual")
    expect(page.locator("#arena-header")).to_contain_text("Multilingual text-to-speech")
    expect(page.locator("#language-in")).to_be_visible()
    page.close()


def test_a_battle_asked_for_right_after_an_arena_pick_opens_when_the_pick_is_served_last(
    running_app, browser
):
    """Multilingual picked, then New battle at once, and the server served the battle's
    first call before the pick's (both skip Gradio's queue, so a busy server may serve them
    in either order): the pick then counted as leaving the battle just asked for, which came
    back stale, and the page waited for it forever (a clean-clone CI run of session 32 met
    this in test_browser_clip_start). The battle's call records the arena, so the late pick
    changes nothing."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-pick-then-battle")
    visit.arrive(running_app.url)
    page = visit.page
    calls = HeldCalls(visit, pick=lambda b: b.get("data") == [None, "tts-multilingual"])
    visit.pick("#arena-in", "Multilingual text-to-speech")
    calls.wait_held("pick")
    visit.key("n")
    page.wait_for_timeout(1500)  # the battle's first call is served before the pick's
    calls.release("pick")
    page.unroute(HeldCalls.PATTERN)
    visit.battle_ready()
    expect(page.locator("#arena-header")).to_contain_text("Multilingual")
    page.close()


def test_a_battle_asked_for_before_the_switch_back_to_english_is_answered_opens(
    running_app, browser
):
    """Multilingual picked (its language box set to English), then English again, and New
    battle pressed before the switch's answer reached the page (a busy server): the page
    still sent Multilingual's language, which the server, already holding English's empty
    choice of languages, refused before any handler ran. The visitor got a bare "Error" and
    a gate "Making both outputs…" for good (session 34's flaky test_browser_clip_start met
    this under load). An arena without languages now lets the stale one go."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-language-left")
    visit.arrive(running_app.url)
    page = visit.page
    visit.pick("#arena-in", "Multilingual text-to-speech")
    expect(page.locator("#language-in")).to_be_visible()
    calls = HeldCalls(visit, served=True, english=header_of("tts-en"))
    visit.pick("#arena-in", "English text-to-speech")
    calls.wait_held("english")
    page.locator("#prompt-in textarea").fill("Hi there.")
    visit.key("n")
    visit.battle_ready()
    calls.release("english")
    page.unroute(HeldCalls.PATTERN)
    expect(page.locator("#language-in")).to_be_hidden()
    expect(page.locator("#arena-header")).to_contain_text("English text-to-speech")
    page.close()


def test_a_language_typed_into_its_box_is_refused_in_words(running_app, browser):
    """The language box takes any text (so a stale value reaches the handler, above): one
    the arena has not is refused with a line asking for one from the list, and no battle."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-language-typed")
    visit.arrive(running_app.url)
    page = visit.page
    visit.pick("#arena-in", "Multilingual text-to-speech")
    box = page.locator("#language-in input")
    box.fill("Klingon")
    box.press("Enter")
    page.locator("#prompt-in textarea").fill("Hi there.")
    visit.key("n")
    expect(page.locator("#status")).to_contain_text(
        "Pick the language of your prompt from the list", timeout=20_000
    )
    expect(page.locator('#gate .gate[data-stage="open"]')).to_have_count(0)
    visit.shot("refused")
    page.close()
