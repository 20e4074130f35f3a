"""A hunt for what a visitor on the keyboard alone, with a screen reader, on a small phone or
at a large zoom meets, in Debian's Chromium (the other browser tests click with a mouse on a
laptop).

What a screen reader is given is read here as it reads it: a change of the accessible text
(``aria-hidden`` and hidden elements left out) of a live region already in the page.
"""

import pytest
from browser import GATE_SHARE, LAPTOP, SCREENSHOTS, Visit, expect
from gradio_client import Client

pytestmark = pytest.mark.browser

SHORT = "The kettle is already boiling."

#: Run in the page before its own scripts: each change of the accessible text of a live
#: region that was in the document before the change, as [ms, region, text], in order (a
#: region inserted with its words is often not read at all, so it is not counted here).
SPOKEN = """(() => {
  const log = window.__said = [];
  const known = new WeakSet(); const last = new WeakMap();
  const LIVE = '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]';
  const text = (el) => { let out = "";
    const walk = (n) => { for (const c of n.childNodes) {
      if (c.nodeType === 3) out += c.data;
      else if (c.nodeType === 1 && c.getAttribute("aria-hidden") !== "true") {
        const cs = getComputedStyle(c);
        if (cs.display !== "none" && cs.visibility !== "hidden") walk(c); } } };
    walk(el); return out.replace(/\\s+/g, " ").trim(); };
  const scan = () => {
    for (const el of document.querySelectorAll(LIVE)) {
      const t = text(el);
      if (!known.has(el)) { known.add(el); last.set(el, t); continue; }
      if (last.get(el) === t) continue;
      last.set(el, t);
      if (t) log.push([Math.round(performance.now()), el.id || el.className, t]);
    }
  };
  const start = () => { scan(); new MutationObserver(scan).observe(document,
    { childList: true, subtree: true, characterData: true, attributes: true }); };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})()"""


def spoken(page) -> list:
    """What the live regions said since the last call."""
    return page.evaluate("() => window.__said.splice(0)")


def screen_reader_visit(browser, name: str, url: str, **options) -> Visit:
    page = browser.new_page(**{"viewport": LAPTOP, "locale": "en-US", **options})
    page.add_init_script(SPOKEN)
    visit = Visit(page, name)
    visit.arrive(url)
    return visit


def in_view(page, selector: str) -> bool:
    """Whether any of the element is inside the window (not scrolled out of it)."""
    return page.evaluate(
        """s => { const r = document.querySelector(s).getBoundingClientRect();
          return r.bottom > 0 && r.top < innerHeight && r.width > 0; }""",
        selector,
    )


def test_shortcuts_act_at_once_after_their_switch_is_clicked(running_app, browser):
    """A visitor clicked the "Keyboard shortcuts" switch off and on again, then pressed N:
    nothing happened, nor for A, B, T, X or P, until they clicked somewhere else. The focus
    stays on the switch, a checkbox, and the page took every key there for typing."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "access-switch-then-n")
    page = visit.page
    visit.arrive(running_app.url)
    switch = page.get_by_role("switch", name="Keyboard shortcuts")
    switch.click()
    expect(switch).not_to_be_checked()
    switch.click()
    expect(switch).to_be_checked()
    assert page.evaluate("() => document.activeElement.id") == "keys-switch"
    page.keyboard.press("n")  # the focus left where the click put it
    # N acted at once (the battle's making can take a minute on a loaded machine: waited
    # for below, as everywhere).
    acted = page.locator('#gate .gate[data-stage="working"], #gate .gate[data-stage="open"]')
    expect(acted).to_be_visible(timeout=15_000)
    visit.battle_ready()
    page.close()


def test_a_refused_prompt_is_shown_and_said_beside_the_prompt_box(running_app, browser):
    """A prompt of only punctuation, sent with Enter: the refusal was written only under the
    vote buttons, below the fold of a laptop (its toast never shows: the event skips the
    queue), in no live region. The visitor saw and heard nothing, as if Enter did nothing."""
    visit = screen_reader_visit(browser, "access-prompt-refused", running_app.url)
    page = visit.page
    box = page.locator("#prompt-in textarea")
    box.fill("!!! ???")
    spoken(page)
    box.press("Enter")
    expect(page.locator("#status")).to_contain_text("letter or digit", timeout=20_000)
    line = page.locator("#prompt-count")
    expect(line).to_contain_text("letter or digit", timeout=5_000)
    assert in_view(page, "#prompt-count")
    page.wait_for_timeout(500)
    assert any("letter or digit" in text for _, _, text in spoken(page))
    visit.shot("refused")
    box.fill("A letter at last.")  # typing on: the line counts again, the refusal goes
    expect(line).to_have_text("")
    page.close()


@pytest.fixture
def gated(running_app):
    running_app.service.listen_share = GATE_SHARE
    yield running_app
    running_app.service.listen_share = 0.0


def test_a_held_vote_is_said_once_not_counted_down_every_second(gated, browser):
    """A vote the server's listening gate held: the gate, a live region, changed its words
    each second ("will be sent in 33 s", "32 s", ...), and a screen reader read the whole
    gate again each time (some thirty times, each longer to say than a second), after a
    first flash of "Voting opens once you have heard both clips" to a visitor who had."""
    visit = screen_reader_visit(browser, "access-held-said", gated.url)
    page = visit.page
    page.locator("#prompt-in textarea").fill(SHORT)
    visit.key("n")
    visit.battle_ready()
    visit.listen_to_both()
    spoken(page)
    visit.key("a")
    expect(page.locator("#gate .gate")).to_have_attribute("data-ready", "wait", timeout=20_000)
    page.wait_for_timeout(4_000)
    said = [text for _, region, text in spoken(page) if "gate" in region]
    assert len(said) == 1, said
    assert "A is better" in said[0] and "will be sent" in said[0], said
    assert "sent in" in page.locator("#gate .gate").inner_text()  # still counted on screen
    visit.key("b")  # another choice while held: said once more
    page.wait_for_timeout(1_500)
    said = [text for _, region, text in spoken(page) if "gate" in region]
    assert len(said) == 1 and "B is better" in said[0], said
    page.close()


def test_after_a_keyboard_vote_at_200_percent_zoom_the_focus_is_on_screen(running_app, browser):
    """At 200% zoom (a 1366 x 800 laptop seen as 683 x 400), a vote pressed with Enter moved
    the focus to Next battle without scrolling: the button with the focus was below the
    window, so a keyboard user could not see where they were (WCAG 2.4.11). It is on screen
    from the first frame the focus is there: a smooth scroll went on under the visitor's
    next click (an arena list opened meanwhile was left out of the window, session 35)."""
    visit = Visit(browser.new_page(viewport={"width": 683, "height": 400},
                                   device_scale_factor=2, locale="en-US"),
                  "access-zoom-vote")  # fmt: skip
    page = visit.page
    visit.arrive(running_app.url)
    page.locator("#prompt-in textarea").fill(SHORT)
    visit.key("n")
    visit.battle_ready()
    visit.listen_to_both()
    page.locator("#vote-b").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#side-B .side-head.picked")).to_be_visible(timeout=20_000)
    first_frame = page.wait_for_function(
        """() => { const a = document.activeElement;
          if (!a || a.id !== "next-battle") return false;
          const r = a.getBoundingClientRect();
          return { seen: r.bottom > 0 && r.top < innerHeight }; }""",
        polling="raf", timeout=20_000,
    )  # fmt: skip
    assert first_frame.json_value() == {"seen": True}
    assert in_view(page, "#next-battle")
    visit.shot("voted")
    page.screenshot(path=SCREENSHOTS / "access-zoom-vote-window.png")  # what the visitor sees
    page.close()


def test_the_board_on_a_360_px_phone_shows_its_battles_column(running_app, browser):
    """A 360 px phone (many Androids) on a board whose models fall into groups: the rank
    cells' "(group 1)" did not wrap and pushed the Battles column out of the table's box
    ("Battl"), though a phone is to show rank, model, rating and battles."""
    service = running_app.service
    client = Client(running_app.url, analytics_enabled=False, verbose=False)
    for _ in range(8):  # a few votes on pairs drawn apart: groups that never met
        if service.progress.done and service.board("tts-en").components > 1:
            break
        client.predict("tts-en", SHORT, "", api_name="/new_battle")
        client.predict("a", api_name="/vote")
    assert service.board("tts-en").components > 1
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True,
                                  has_touch=True, device_scale_factor=2, locale="en-US")  # fmt: skip
    visit = Visit(context.new_page(), "access-board-360")
    page = visit.page
    visit.arrive(running_app.url)
    page.get_by_role("tab", name="Leaderboard").tap()
    expect(page.locator("#board-table td.c-rank .group").first).to_be_visible(timeout=20_000)
    widths = page.evaluate(
        """() => { const wrap = document.querySelector('#board-table .board-wrap');
          return [wrap.clientWidth, wrap.scrollWidth]; }"""
    )
    visit.shot("board")
    assert widths[1] <= widths[0], f"the table is {widths[1]} px wide in a {widths[0]} px box"
    context.close()
