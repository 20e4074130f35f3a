"""The Arena tab holds still and answers only when it is seen, in Debian's Chromium.

The page kept the battle's prompt box only while a battle was open, so everything under it
jumped up and down at each battle; P played the hidden battle from another tab; a vote
by keyboard left the focus nowhere; and a phone was asked to press keys it has not got.
"""

import pytest
from browser import LAPTOP, MEDIA, PHONE, Visit, expect

pytestmark = pytest.mark.browser

SHORT = "The kettle is already boiling."
#: Where the clips start on the page (px from its top).
CLIPS_TOP = "() => document.getElementById('col-A').getBoundingClientRect().top + window.scrollY"


def open_battle(running_app, browser, name: str, **options) -> Visit:
    visit = Visit(browser.new_page(locale="en-US", **options), name)
    visit.arrive(running_app.url)
    visit.page.locator("#prompt-in textarea").fill(SHORT)
    visit.key("n")
    visit.battle_ready()
    return visit


def test_the_clips_stay_in_place_while_the_next_battle_is_made(running_app, browser):
    visit = open_battle(running_app, browser, "steady-layout", viewport=LAPTOP)
    page = visit.page
    visit.listen_to_both()
    top = page.evaluate(CLIPS_TOP)  # of an open battle (New battle shown above the clips)
    visit.key("a")
    next_battle = page.locator("#next-battle")
    expect(next_battle).to_be_visible(timeout=20_000)
    # A keyboard vote leaves the focus on Next battle (it was on the page's body).
    expect(next_battle).to_be_focused()
    page.keyboard.press("Enter")
    page.locator('#gate .gate[data-stage="working"]').wait_for(timeout=10_000)
    # The prompt box keeps its place while generating (it moved them by about 100 px).
    assert abs(page.evaluate(CLIPS_TOP) - top) <= 2
    visit.shot("generating")
    visit.battle_ready()
    assert abs(page.evaluate(CLIPS_TOP) - top) <= 2
    page.close()


def test_shortcuts_do_nothing_while_another_tab_is_shown(running_app, browser):
    visit = open_battle(running_app, browser, "steady-tabs", viewport=LAPTOP)
    page = visit.page
    page.get_by_role("tab", name="Leaderboard").click()
    expect(page.locator("#arena-tab")).to_be_hidden()
    visit.key("p")
    page.wait_for_timeout(1500)
    assert page.evaluate(f"() => ['A', 'B'].map(s => ({MEDIA})(s).paused)") == [True, True]
    page.get_by_role("tab", name="Arena").click()
    visit.speed_up()
    visit.key("p")  # back on the Arena tab, P plays again
    page.wait_for_function(f"() => !({MEDIA})('A').paused", timeout=10_000)
    page.close()


def test_a_phone_is_not_asked_for_keys(running_app, browser):
    visit = Visit(browser.new_page(viewport=PHONE, locale="en-US", has_touch=True), "phone-keys")
    page = visit.page
    visit.arrive(running_app.url)
    text = page.locator("#gate .gate-text")
    expect(text).to_contain_text("New battle")
    assert "(or N)" not in text.inner_text()
    page.locator("#new-battle").click()
    visit.battle_ready()
    expect(text).to_contain_text("Play A then B")
    assert "(or P)" not in text.inner_text()
    visit.listen_to_both()
    expect(text).to_contain_text("your vote, please")
    assert "A B T X" not in text.inner_text() and "(" not in text.inner_text()
    visit.shot("heard")
    page.close()
