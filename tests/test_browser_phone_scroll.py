"""A battle opened on a phone comes into view, in Debian's Chromium.

On a 390 px screen the clips and the vote buttons sit about a thousand pixels under the
New battle button, and the page did not move: pressing it seemed to do nothing.
"""

import pytest
from browser import PHONE, SCREENSHOTS, Visit, expect

pytestmark = pytest.mark.browser

#: Where an element is in the window (px from the window's top), and the window's height.
IN_VIEW = """sel => { const r = document.querySelector(sel).getBoundingClientRect();
  return [r.top, r.bottom, window.innerHeight]; }"""


def in_view(page, selector: str) -> bool:
    top, bottom, height = page.evaluate(IN_VIEW, selector)
    return top >= 0 and bottom <= height


def test_a_new_battle_on_a_phone_scrolls_its_clips_into_view(running_app, browser):
    visit = Visit(browser.new_page(viewport=PHONE, locale="en-US", has_touch=True), "phone-scroll")
    page = visit.page
    visit.arrive(running_app.url)
    page.locator("#new-battle").click()
    visit.battle_ready()
    page.wait_for_function(
        "() => { const r = document.getElementById('col-A').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight / 3; }",
        timeout=10_000,
    )
    assert in_view(page, "#audio-A")
    page.wait_for_timeout(800)  # the smooth scroll has ended
    visit.shot("opened")
    page.screenshot(path=SCREENSHOTS / "phone-scroll-viewport.png")
    # Once per battle: scrolled back up to read, the visitor stays there.
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(1200)
    assert page.evaluate("() => window.scrollY") == 0
    expect(page.locator("#new-battle")).to_be_in_viewport()
    page.close()
