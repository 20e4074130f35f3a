"""A demanding visitor's battle in Debian's Chromium: a server that fails, a slow network, the
keyboard after Next battle, and a system that asks for less motion.

Each test is a defect a visitor met: a failure on the server (not a refusal) covered every
player with a bare "Error" and said nothing else; "Play A then B" pressed while the clips
were still on their way said "playing…" and then played nothing; after Next battle the
keyboard's focus fell to the page's body, so Tab went to the footer; and the gate shook, and
a phone scrolled smoothly, for a visitor whose system asks for reduced motion.
"""

import re

import pytest
from browser import LAPTOP, MEDIA, PHONE, Visit, battle_opened, expect

from arena_core.votes.read import read_votes

pytestmark = pytest.mark.browser

SHORT = "The kettle is already boiling."
#: The battle's clips, as the page fetches them (``ClipStore``'s route).
CLIPS = "**/arena-clips/**"


def no_bare_error(page) -> None:
    """Gradio's own "Error" badge (a handler that raised) is nowhere on the Arena tab."""
    expect(page.locator("#arena-tab").get_by_text("Error", exact=True)).to_have_count(0)


def test_a_battle_that_fails_on_the_server_says_so_and_new_battle_recovers(
    running_app, browser, monkeypatch
):
    """An unexpected failure while a battle is made (a bug, a full disk) left "Making both
    outputs…" over the buttons and a bare "Error" over every player: the visitor could not
    tell that it had failed, nor what to do."""
    service = running_app.service
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-battle-fails")
    page = visit.page
    visit.arrive(running_app.url)
    real = service.new_battle

    def fails(*args, **kwargs):
        raise RuntimeError("the clip store's disk is full")

    monkeypatch.setattr(service, "new_battle", fails)
    visit.key("n")
    expect(page.locator("#status")).to_contain_text("went wrong", timeout=20_000)
    expect(page.locator("#status")).to_contain_text("New battle")
    expect(page.locator('#gate .gate[data-stage="idle"]')).to_be_visible()
    no_bare_error(page)
    visit.shot("failed")
    monkeypatch.setattr(service, "new_battle", real)
    visit.key("n")  # the page recovers: the next battle opens as usual
    visit.battle_ready()
    no_bare_error(page)
    page.close()


def test_a_vote_that_fails_on_the_server_says_so_and_keeps_the_clips(
    running_app, browser, monkeypatch
):
    """An unexpected failure while a vote was recorded hid both players under a bare
    "Error" and left "Listen to both clips to the end" under the buttons: nothing said the
    vote was not taken, nor that it could be pressed again."""
    service = running_app.service
    visit = battle_opened(browser, running_app.url, "hunt-vote-fails", SHORT)
    page = visit.page
    visit.listen_to_both()
    real = service.vote

    def fails(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(service, "vote", fails)
    visit.key("a")
    expect(page.locator("#status")).to_contain_text("recording your vote", timeout=20_000)
    no_bare_error(page)
    for side in "AB":  # the clips are still there, to be heard again
        expect(page.locator(f"#audio-{side}")).to_be_visible()
        assert page.evaluate(f"s => ({MEDIA})(s).duration > 0", side)
    visit.shot("failed")
    monkeypatch.setattr(service, "vote", real)
    visit.key("a")  # pressed again, it is taken
    expect(page.locator("#side-A .side-head.picked")).to_be_visible(timeout=20_000)
    page.close()


def test_a_vote_written_before_the_server_failed_is_revealed_when_pressed_again(
    running_app, browser, monkeypatch
):
    """The row was written, then the answer failed (a dropped connection, an error after
    the write). The page says "Press your choice again"; pressed again, the vote was refused
    as a second one, which the page takes for its own double click and shows as nothing:
    the visitor never saw the reveal of a vote that counted. Now the recorded vote is
    revealed, and counted once, in the log and in the session's count."""
    service = running_app.service
    visit = battle_opened(browser, running_app.url, "hunt-vote-written-then-fails", SHORT)
    page = visit.page
    visit.listen_to_both()
    real, before = service.vote, len(read_votes(running_app.settings.votes_dir))

    def written_then_fails(*args, **kwargs):
        real(*args, **kwargs)
        raise ConnectionResetError("the answer never left the server")

    monkeypatch.setattr(service, "vote", written_then_fails)
    visit.key("a")
    expect(page.locator("#status")).to_contain_text("recording your vote", timeout=20_000)
    monkeypatch.setattr(service, "vote", real)
    visit.key("a")  # pressed again: the vote already recorded is revealed
    expect(page.locator("#side-A .side-head.picked")).to_be_visible(timeout=20_000)
    expect(page.locator("#status")).to_contain_text("You voted A is better")
    expect(page.locator("#status")).to_contain_text("That makes 1 this session")  # counted once
    expect(page.locator("#next-battle")).to_be_visible()
    no_bare_error(page)
    assert len(read_votes(running_app.settings.votes_dir)) == before + 1
    visit.shot("revealed-after-failure")
    page.close()


def test_play_a_then_b_pressed_while_the_clips_load_plays_them(running_app, browser):
    """On a slow network the battle opens before its clips arrive. "Play A then B" pressed
    then showed "playing…" while clip A loaded, and Gradio's player stopped it once loaded
    (a pause and a seek to 0): nothing played, and the side went back to "not heard yet".
    The clips are held in the browser here until the button was pressed."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-slow-clips")
    page = visit.page
    visit.arrive(running_app.url)
    held = []
    page.route(CLIPS, lambda route: held.append(route))
    page.locator("#prompt-in textarea").fill(SHORT)
    visit.key("n")
    page.locator('#gate .gate[data-stage="open"]').wait_for(timeout=90_000)
    for _ in range(200):  # both players asked for their clip
        if len(held) >= 2:
            break
        page.wait_for_timeout(50)
    assert len(held) >= 2, f"clips asked for: {len(held)}"
    visit.speed_up()  # the rate a clip starts at once loaded (defaultPlaybackRate)
    visit.key("p")
    page.wait_for_timeout(1000)
    page.unroute(CLIPS)  # the held requests go on: the clips arrive
    try:
        page.locator('#gate .gate[data-ready="yes"]').wait_for(timeout=30_000)
    except Exception as error:
        raise AssertionError(f"the clips never played: {visit.diagnosis()}") from error
    for side in "AB":
        expect(page.locator(f"#side-{side} .side-state")).to_have_text("heard ✓")
    visit.shot("heard")
    page.close()


def test_after_next_battle_the_keyboard_focus_stays_in_the_battle(running_app, browser):
    """Next battle hides once pressed: the focus fell to the page's body, and the next Tab
    went to the footer ("Use via API"), past the whole battle. It lands on New battle, from
    which Tab reaches the new clips."""
    visit = battle_opened(browser, running_app.url, "hunt-focus-next", SHORT)
    page = visit.page
    visit.listen_to_both()
    visit.key("a")
    next_battle = page.locator("#next-battle")
    expect(next_battle).to_be_focused(timeout=20_000)
    page.keyboard.press("Enter")
    expect(page.locator("#new-battle")).to_be_focused(timeout=10_000)
    visit.battle_ready()
    page.keyboard.press("Tab")
    where = page.evaluate("() => document.activeElement.closest('[id]')?.id")
    assert where == "audio-A", f"Tab after the next battle opened went to {where!r}"
    page.close()


#: Each scrollIntoView call's options, recorded in the page before its scripts run.
RECORD_SCROLLS = """(() => { window.__scrolls = []; const call = Element.prototype.scrollIntoView;
  Element.prototype.scrollIntoView = function (options) {
    window.__scrolls.push(JSON.stringify(options ?? null)); return call.apply(this, arguments); }; })()"""
#: The gate's transform every 25 ms for 700 ms (the nudge's animation lasts 500 ms).
TRANSFORMS = """() => new Promise((done) => { const seen = new Set(); const t0 = performance.now();
  const tick = () => { seen.add(getComputedStyle(document.querySelector('#gate .gate')).transform);
    if (performance.now() - t0 < 700) setTimeout(tick, 25); else done([...seen]); }; tick(); })"""


def test_a_visitor_who_asks_for_less_motion_gets_no_shake_and_no_smooth_scroll(
    running_app, browser
):
    """With the system's "reduce motion" on (prefers-reduced-motion), a press on a locked vote
    button still shook the gate sideways, and a battle opened on a phone still scrolled
    smoothly into view: the motion such visitors ask to be spared (WCAG 2.3.3)."""
    context = browser.new_context(viewport=PHONE, has_touch=True, locale="en-US",
                                  reduced_motion="reduce")  # fmt: skip
    visit = Visit(context.new_page(), "hunt-less-motion")
    page = visit.page
    page.add_init_script(RECORD_SCROLLS)
    visit.arrive(running_app.url)
    page.locator("#new-battle").tap()
    visit.battle_ready()
    page.wait_for_function("() => window.__scrolls.length > 0", timeout=10_000)
    scrolls = page.evaluate("() => window.__scrolls")
    assert not [s for s in scrolls if '"smooth"' in s], scrolls
    visit.key("a")  # locked: the gate explains itself
    transforms = page.evaluate(TRANSFORMS)
    expect(page.locator("#gate .gate")).to_have_class(re.compile(r"\bnudge\b"))
    assert transforms == ["none"], f"the gate moved: {transforms}"
    visit.shot("nudged")
    context.close()
