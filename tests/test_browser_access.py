"""Access in Debian's Chromium: the arena on a phone, and with the keyboard alone.

On a phone (390 px wide, touch): nothing wider than the screen, the four vote buttons in
reach, the reveal and the board readable. The visitor's browser asks for German, so the
multilingual arena's language choice starts on German. With the keyboard alone: every
control has a name, focus always shows, and Tab and Enter reach and press a vote button.
Screenshots go to tests/output/screenshots/ like the desktop visit's.
"""

import pytest
from browser import LAPTOP, PHONE, UNNAMED_CONTROLS, Visit, expect

pytestmark = pytest.mark.browser


def fits(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide on a {PHONE['width']} px screen"


def test_the_arena_on_a_phone(running_app, browser):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True,
                                  device_scale_factor=2, locale="de-DE")  # fmt: skip
    visit = Visit(context.new_page(), "phone")
    page = visit.page
    visit.arrive(running_app.url)
    fits(page)
    visit.shot("arrival")

    page.locator("#new-battle").tap()
    visit.battle_ready()
    fits(page)
    for vote in ("a", "b", "tie", "both_bad"):  # all four on screen, two by two
        box = page.locator(f"#vote-{vote}").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        assert box["height"] >= 44  # a thumb's target
    # Rows by their place in the page, read at once: the battle that opened is still
    # scrolling into view (smoothly), so places on screen move between two reads.
    tops = page.evaluate(
        "() => ['a', 'b', 'tie', 'both_bad'].map(v => Math.round("
        "document.getElementById('vote-' + v).getBoundingClientRect().top + window.scrollY))"
    )
    assert len(set(tops)) == 2
    visit.shot("battle")

    visit.speed_up()
    page.locator("#play-both").tap()
    page.locator('#gate .gate[data-ready="yes"]').wait_for(timeout=30_000)
    page.locator("#vote-tie").tap()
    expect(page.locator("#side-A .side-head.tie")).to_be_visible(timeout=20_000)
    fits(page)
    visit.shot("reveal")

    page.get_by_role("tab", name="Leaderboard").tap()
    expect(page.locator("#board-summary")).to_contain_text("counted", timeout=20_000)
    expect(page.locator("#chart-ratings .main-svg").first).to_be_visible(timeout=20_000)
    fits(page)
    table = page.locator("#board-table table")
    assert table.bounding_box()["width"] <= PHONE["width"]
    expect(table.locator("th.wide-only").first).to_be_hidden()  # the details stay on laptops
    expect(table.locator("th", has_text="Rating")).to_be_visible()
    visit.shot("board")

    page.get_by_role("tab", name="Arena").tap()
    visit.pick("#arena-in", "Multilingual text-to-speech")
    expect(page.locator("#language-in input")).to_have_value("German (Deutsch)")
    fits(page)
    visit.shot("multilingual-german")
    context.close()


def test_every_control_is_named_focus_shows_and_the_keyboard_alone_votes(running_app, browser):
    visit = Visit(browser.new_page(viewport=LAPTOP), "keyboard")
    page = visit.page
    visit.arrive(running_app.url)

    def tab_to(selector: str, limit: int = 60) -> None:
        """Press Tab until ``selector`` has the focus, checking each stop shows it."""
        for _ in range(limit):
            page.keyboard.press("Tab")
            focus = page.evaluate(
                "() => { const e = document.activeElement; const cs = getComputedStyle(e);"
                " return {tag: e.tagName, outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth),"
                " shadow: cs.boxShadow}; }"
            )
            if focus["tag"] != "BODY":  # the page itself between the last and first control
                assert focus["outline"] != "none" and focus["width"] >= 2, focus
            if page.evaluate("s => document.activeElement.matches(s)", selector):
                return
        raise AssertionError(f"{selector} not reached with Tab")

    tab_to("#new-battle")
    page.keyboard.press("Enter")
    visit.battle_ready()
    assert page.evaluate(UNNAMED_CONTROLS) == []
    visit.listen_to_both()
    tab_to("#vote-b")
    visit.shot("focus-on-vote")
    page.keyboard.press("Enter")
    expect(page.locator("#side-B .side-head.picked")).to_be_visible(timeout=20_000)
    # Each tab is checked once its content is drawn: after a fixed half second, a busy
    # machine could leave the check looking at a half-drawn tab.
    shown = {"Leaderboard": "#board-tab #chart-ratings .main-svg", "About": "#about-tab h2"}
    for tab, drawn in shown.items():
        page.get_by_role("tab", name=tab).click()
        expect(page.locator(drawn).first).to_be_visible(timeout=20_000)
        assert page.evaluate(UNNAMED_CONTROLS) == [], tab
    page.close()
