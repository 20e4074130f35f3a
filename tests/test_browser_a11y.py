"""Accessibility in Debian's Chromium: the reveal said to a screen reader, and the single-key
shortcuts that a visitor can turn off.

Both were found by a hunt. After a vote the two sides showed their models, but in no live
region: the gate, the only one, said "Vote saved. Press Next battle…", so a screen-reader
user never heard who they had voted for. And A, B, T, X, N and P acted at once with no way
to turn them off (WCAG 2.1.4, Level A): a speech-input user's dictated word, or a stray key,
voted or started a battle.
"""

import pytest
from browser import LAPTOP, MEDIA, Visit, expect, names_and_ids

pytestmark = pytest.mark.browser

SHORT = "The kettle is already boiling."

#: Run in the page before its own scripts: each new text of every live region (what a
#: screen reader would be given to say), in order, read at every change of the page.
LIVE_LOG = """(() => {
  const log = window.__live = [];
  const last = new WeakMap();
  const LIVE = '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]';
  const read = () => {
    for (const el of document.querySelectorAll(LIVE)) {
      const text = (el.textContent || "").replace(/\\s+/g, " ").trim();
      if (last.get(el) !== text) { last.set(el, text); if (text) log.push(text); }
    }
  };
  new MutationObserver(read).observe(document, { childList: true, subtree: true, characterData: true });
})()"""
#: The texts every live region holds now.
LIVE_NOW = """() => [...document.querySelectorAll(
  '[aria-live]:not([aria-live="off"]), [role="status"], [role="alert"], [role="log"]')]
  .map(el => (el.textContent || "").replace(/\\s+/g, " ").trim())"""


def revealed_name(page, side: str) -> str:
    """The model's name a side shows after the vote (its link's arrow left out)."""
    return page.locator(f"#side-{side} .side-head .name").inner_text().replace("↗", "").strip()


def test_the_reveal_is_said_once_in_a_live_region_and_never_before_the_vote(running_app, browser):
    """The names are said once per vote, politely ("A was X, B was Y."), in a live region
    that is empty on load and never names a model before the vote is recorded."""
    page = browser.new_page(viewport=LAPTOP, locale="en-US")
    page.add_init_script(LIVE_LOG)
    visit = Visit(page, "a11y-reveal-said")
    visit.arrive(running_app.url)
    models = names_and_ids(running_app.service, "tts-en")
    page.locator("#prompt-in textarea").fill(SHORT)
    visit.key("n")
    visit.battle_ready()
    visit.listen_to_both()
    before = page.evaluate("() => window.__live.slice()")
    assert not [t for t in before if " was " in t], before  # nothing said on load
    assert not [(m, t) for t in before for m in models if m in t], before  # blind

    visit.key("a")
    expect(page.locator("#side-B .side-head.revealed")).to_be_visible(timeout=20_000)
    a, b = revealed_name(page, "A"), revealed_name(page, "B")
    assert {a, b} <= models, (a, b)
    sentence = f"A was {a}, B was {b}."
    try:
        page.wait_for_function("s => window.__live.some(t => t.includes(s))", arg=sentence,
                               timeout=10_000)  # fmt: skip
    except Exception as error:
        said = page.evaluate("() => window.__live.slice()")
        raise AssertionError(f"{sentence!r} not said; the live regions said {said}") from error
    page.wait_for_timeout(1500)  # several of the page script's renders: said once only
    said = page.evaluate("() => window.__live.slice()")
    assert len([t for t in said if sentence in t]) == 1, said
    # One region holds the names: another one (the gate) saying them too is said twice.
    assert len([t for t in page.evaluate(LIVE_NOW) if a in t]) == 1, page.evaluate(LIVE_NOW)
    visit.shot("revealed")

    visit.key("n")  # the next battle: its region is emptied, nothing of the last one lingers
    visit.battle_ready()
    assert not [t for t in page.evaluate(LIVE_NOW) if " was " in t], page.evaluate(LIVE_NOW)
    page.close()


def nothing_happens(page) -> None:
    """A moment for a key's effect to show (a battle asked for answers at once)."""
    page.wait_for_timeout(2000)


def test_the_single_key_shortcuts_can_be_turned_off_and_the_choice_is_kept(running_app, browser):
    """A "Keyboard shortcuts" switch, on by default: off, A B T X N P do nothing, the gate
    says the shortcuts are off and how to turn them on, the vote buttons offer no key to
    a screen reader, and the choice holds after a reload (localStorage)."""
    context = browser.new_context(viewport=LAPTOP, locale="en-US")
    visit = Visit(context.new_page(), "a11y-keys-off")
    page = visit.page
    visit.arrive(running_app.url)
    switch = page.get_by_role("switch", name="Keyboard shortcuts")
    expect(switch).to_be_checked()
    assert "Keys:" in page.locator("#gate").inner_text()
    switch.click()
    expect(switch).not_to_be_checked()
    gate = page.locator("#gate").inner_text()
    assert "Keyboard shortcuts are off" in gate and "turn them on" in gate, gate
    assert "Keys:" not in gate and "(or N)" not in gate, gate
    visit.shot("off")

    visit.key("n")
    nothing_happens(page)
    expect(page.locator('#gate .gate[data-stage="idle"]')).to_be_visible()
    page.locator("#prompt-in textarea").fill(SHORT)
    page.locator("#new-battle").click()  # the buttons still work
    visit.battle_ready()
    assert "(or P)" not in page.locator("#gate").inner_text()
    for vote in ("a", "b", "tie", "both_bad"):
        assert page.locator(f"#vote-{vote}").get_attribute("aria-keyshortcuts") is None, vote
    visit.key("p")
    nothing_happens(page)
    assert visit.paused("A") and visit.paused("B")
    assert page.evaluate(f"s => ({MEDIA})(s).currentTime", "A") == 0
    for attempt in range(2):  # both heard by the button (as listen_to_both does with P)
        visit.speed_up()
        page.locator("#play-both").click()
        try:
            page.locator('#gate .gate[data-ready="yes"]').wait_for(timeout=20_000)
            break
        except Exception as error:
            if attempt:
                raise AssertionError(f"both clips not heard: {visit.diagnosis()}") from error
    visit.key("a")
    nothing_happens(page)
    expect(page.locator('#gate .gate[data-stage="open"]')).to_be_visible()
    expect(page.locator("#side-A .side-head.revealed")).to_have_count(0)
    visit.shot("battle-off")

    visit.arrive(running_app.url)  # a reload: the choice was kept
    expect(switch).not_to_be_checked()
    assert "Keyboard shortcuts are off" in page.locator("#gate").inner_text()
    visit.key("n")
    nothing_happens(page)
    expect(page.locator('#gate .gate[data-stage="idle"]')).to_be_visible()
    switch.click()  # on again: the keys act as before
    expect(switch).to_be_checked()
    assert "Keys:" in page.locator("#gate").inner_text()
    visit.key("n")
    visit.battle_ready()
    assert page.locator("#vote-a").get_attribute("aria-keyshortcuts") == "A"
    context.close()
