"""A prompt over the length limit, in Debian's Chromium: refused before anything is cleared.

The battle on screen stayed only until the server read the prompt: its clips, sides and
prompt were cleared first, so a visitor who typed too much lost the battle they were
listening to.
"""

import pytest
from browser import LAPTOP, MEDIA, Visit, expect

pytestmark = pytest.mark.browser

SHORT = "The kettle is already boiling."
SENTENCE = ("The committee met on a grey Tuesday morning to discuss the harbour, the new bridge "
            "and the old lighthouse. ")  # fmt: skip


def test_a_too_long_prompt_is_refused_and_the_battle_on_screen_stays(running_app, browser):
    limit = running_app.settings.max_prompt_chars
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "prompt-limit")
    page = visit.page
    visit.arrive(running_app.url)
    prompt = page.locator("#prompt-in textarea")
    prompt.fill(SHORT)
    visit.key("n")
    visit.battle_ready()
    visit.listen_to_both()
    sources = page.evaluate(f"() => ['A', 'B'].map(s => ({MEDIA})(s).currentSrc)")
    long = (SENTENCE * 10)[: limit + 40]
    prompt.fill(long)
    prompt.press("Enter")
    expect(page.locator("#status")).to_contain_text(f"the limit is {limit}", timeout=20_000)
    page.wait_for_timeout(1500)  # nothing else arrives after the refusal
    # The battle on screen is untouched: its prompt, its clips, what was heard, the vote.
    expect(page.locator("#prompt-shown textarea")).to_have_value(SHORT)
    expect(page.locator('#gate .gate[data-stage="open"][data-ready="yes"]')).to_be_visible()
    assert page.evaluate(f"() => ['A', 'B'].map(s => ({MEDIA})(s).currentSrc)") == sources
    for side in "AB":
        expect(page.locator(f"#side-{side} .side-state")).to_have_text("heard ✓")
    assert prompt.input_value() == long  # the text stays, to be shortened
    # The box counts the characters against the limit (as the server counts them).
    expect(page.locator("#prompt-count")).to_have_text(
        f"{limit + 40} / {limit} characters: 40 too many"
    )
    visit.shot("refused-battle-kept")
    visit.key("a")
    expect(page.locator("#side-A .side-head.picked")).to_be_visible(timeout=20_000)
    page.close()
