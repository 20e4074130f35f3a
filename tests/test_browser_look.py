"""What the page looks like in Debian's Chromium: dark mode's contrast through a whole
battle, the widest board on a wide screen, and the Leaderboard following arena switches.

Contrast is measured as WCAG defines it, between an element's text colour and the first
opaque background behind it; 4.5:1 is the level AA asks of body text.
"""

import pytest
from browser import LAPTOP, Visit, expect

pytestmark = pytest.mark.browser

#: WCAG AA for text of ordinary size.
AA = 4.5
#: The text colour of ``selector`` against the background behind it, and the ratio.
CONTRAST = """sel => { const el = document.querySelector(sel); if (!el) return null;
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  let box = el, bg = null;
  for (; box; box = box.parentElement) { const c = getComputedStyle(box).backgroundColor;
    if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') { bg = c; break; } }
  bg = bg || getComputedStyle(document.body).backgroundColor;
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(rgb(bg));
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); }"""
#: The Japanese arena's board has the widest table (its parameter columns); the page is at
#: most 1180 px wide, so a wide screen and a small laptop's 1100 px both show it whole.
SCREENS = [{"width": 1920, "height": 1080}, {"width": 1100, "height": 800}]


def low_contrast(page, selectors) -> dict:
    ratios = {s: page.evaluate(CONTRAST, s) for s in selectors}
    missing = [s for s, r in ratios.items() if r is None]
    assert not missing, f"not on the page: {missing}"
    return {s: round(r, 2) for s, r in ratios.items() if r < AA}


#: Every HTML element with text of its own that is shown and enabled (WCAG exempts controls
#: that are disabled) and under AA against the first background colour behind it: [ratio,
#: what]. Not measured: SVG text (the charts' own), inputs' values and placeholders, and
#: colours' transparency (a colour counts as opaque, an ancestor's opacity is ignored).
UNREADABLE = """() => { const out = new Map();
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  for (const el of document.querySelectorAll('body *')) {
    if (!el.offsetParent || el.closest(':disabled, [aria-disabled="true"], .sr-only')) continue;
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || +cs.opacity === 0) continue;
    let box = el, bg = null;
    for (; box; box = box.parentElement) { const c = getComputedStyle(box).backgroundColor;
      if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') { bg = c; break; } }
    bg = bg || getComputedStyle(document.body).backgroundColor;
    const a = lum(rgb(cs.color)), b = lum(rgb(bg));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const what = `${el.tagName.toLowerCase()}#${el.id}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${cs.color} on ${bg}`;
    if (ratio < 4.5 && !out.has(what)) out.set(what, Math.round(ratio * 100) / 100);
  } return [...out].map(([what, ratio]) => [ratio, what]); }"""


#: True once no colour is on its way: a button just chosen fades from one colour to the next
#: (a CSS transition), and read half-way its text was 1.9:1 on its half-coloured ground.
TRANSITIONS_DONE = """() => !document.getAnimations().some(
  (a) => a instanceof CSSTransition && a.playState === "running")"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_text_on_every_tab_is_readable(running_app, browser, theme):
    """Each tab as it opens, and the Leaderboard's Model view: no text under 4.5:1. The
    selected tab's name (4.3:1), the vote buttons and chosen options (white on indigo 500,
    4.47:1), the Leaderboard's labels (3.6:1) and notes (2.6:1), the footer (2.5:1), the
    About tab's code (2.1:1) and dark mode's links (4.0:1) were under it."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), f"readable-{theme}")
    visit.arrive(running_app.url + f"?__theme={theme}")
    page, found = visit.page, {}
    for tab, ready in [("Leaderboard", "#board-table table"), ("About", "#about-tab code"),
                       ("Arena", "#arena-header")]:  # fmt: skip
        page.get_by_role("tab", name=tab).click()
        expect(page.locator(ready).first).to_be_visible(timeout=20_000)
        page.wait_for_timeout(300)  # the tab's fade-in
        page.wait_for_function(TRANSITIONS_DONE, timeout=10_000)
        found[tab] = page.evaluate(UNREADABLE)
    page.get_by_role("tab", name="Leaderboard").click()
    page.locator("#board-view").get_by_text("Model").click()
    expect(page.locator("#board-table .model-view")).to_be_visible(timeout=30_000)
    page.wait_for_function(TRANSITIONS_DONE, timeout=10_000)
    found["Model view"] = page.evaluate(UNREADABLE)
    visit.shot("model")
    assert {tab: rows for tab, rows in found.items() if rows} == {}


def test_dark_mode_text_is_readable_at_every_step(running_app, browser):
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "dark")
    page = visit.page
    visit.arrive(running_app.url + "?__theme=dark")
    assert page.evaluate("document.body.classList.contains('dark')")
    header_parts = ["#arena-header .arena-title", "#arena-header .pitch",
                    "#arena-header .stats span"]  # fmt: skip
    gate = ["#gate .gate-text", "#gate .gate-keys"]
    assert low_contrast(page, header_parts + gate) == {}  # idle
    visit.shot("idle")
    visit.key("n")
    visit.battle_ready()
    assert low_contrast(page, [*gate, "#side-A .side-state"]) == {}  # open, locked
    visit.listen_to_both()
    assert low_contrast(page, gate) == {}  # both heard
    visit.shot("heard")
    visit.key("a")
    expect(page.locator("#side-A .side-head.picked")).to_be_visible(timeout=20_000)
    voted = ["#side-A .name", "#side-A .moves", "#side-B .name", "#side-B .moves",
             "#arena-header .you", "#status p"]  # fmt: skip
    assert low_contrast(page, gate + voted + header_parts) == {}
    visit.shot("voted")
    page.get_by_role("tab", name="Leaderboard").click()
    expect(page.locator("#board-table table")).to_be_visible(timeout=20_000)
    assert low_contrast(page, ["table.board th", "table.board td.c-model"]) == {}
    visit.shot("board")
    page.close()


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: str(s["width"]))
def test_the_widest_board_fits_the_page(running_app, browser, screen):
    service = running_app.service
    if service.board("tts-ja").votes_used < 6:  # every column has something to show
        # Votes written to the log and replayed, not played: six Kokoro battles took 100 s
        # of the suite on a loaded machine, and this test is about the page's width.
        ids = [m.id for m in service.arena("tts-ja").models]
        for k in range(6):
            service.vote_log.append(arena="tts-ja", model_a=ids[k % len(ids)],
                                    model_b=ids[(k + 1) % len(ids)], vote="ab"[k % 2],
                                    voter="wide-screen-test")  # fmt: skip
        service.reload()
    assert service.board("tts-ja").votes_used >= 6
    visit = Visit(browser.new_page(viewport=screen, locale="en-US"), f"wide-{screen['width']}")
    page = visit.page
    page.goto(running_app.url)
    page.get_by_role("tab", name="Leaderboard").click()
    expect(page.locator("#board-table table")).to_be_visible(timeout=20_000)
    visit.pick("#board-arena", "Japanese text-to-speech")
    table = page.locator("#board-table")
    expect(table.locator("th", has_text="Rating / M params")).to_be_visible(timeout=20_000)
    wrap = table.locator(".board-wrap")
    sizes = wrap.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert sizes[0] <= sizes[1] + 1, f"the board is {sizes[0]} px wide in a {sizes[1]} px box"
    expect(table.locator("caption")).to_have_text("Leaderboard of Japanese text-to-speech")
    visit.shot("japanese-board")
    page.close()


def offered_models(visit) -> set[str]:
    """The names the Model view's picker offers (the chosen one comes with a tick)."""
    visit.page.locator("#board-model input").click()
    offered = visit.page.get_by_role("option").all_inner_texts()
    visit.page.keyboard.press("Escape")
    return {o.split("\n")[-1].strip() for o in offered}


def model_view(running_app, browser, name: str) -> Visit:
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), name)
    visit.arrive(running_app.url)
    visit.page.get_by_role("tab", name="Leaderboard").click()
    visit.page.locator("#board-view").get_by_text("Model").click()
    return visit


def test_the_model_picker_follows_the_boards_arena(running_app, browser):
    service = running_app.service
    visit = model_view(running_app, browser, "board-switch")
    page = visit.page
    english = service.arena("tts-en").models
    visit.pick("#board-model", english[2].name)
    expect(page.locator("#board-table")).to_contain_text(english[2].name, timeout=30_000)
    # Another arena on the board: the picker offers its models and shows the one the view
    # shows, and no Gradio error names a model id of the last arena.
    japanese = service.arena("tts-ja").models
    visit.pick("#board-arena", "Japanese text-to-speech")
    expect(page.locator("#board-model input")).to_have_value(japanese[0].name, timeout=20_000)
    expect(page.locator("#board-table")).to_contain_text(japanese[0].name, timeout=30_000)
    assert offered_models(visit) == {m.name for m in japanese}
    expect(page.locator(".toast-body")).to_have_count(0)
    visit.shot("japanese-model")
    page.close()


def test_the_model_picker_follows_the_arena_tabs_arena(running_app, browser):
    service = running_app.service
    visit = model_view(running_app, browser, "arena-switch")
    page = visit.page
    page.get_by_role("tab", name="Arena").click()
    visit.pick("#arena-in", "Multilingual text-to-speech")
    page.get_by_role("tab", name="Leaderboard").click()
    multilingual = service.arena("tts-multilingual").models
    expect(page.locator("#board-model input")).to_have_value(multilingual[0].name,
                                                             timeout=20_000)  # fmt: skip
    assert offered_models(visit) == {m.name for m in multilingual}
    expect(page.locator("#board-table")).to_contain_text(multilingual[0].name, timeout=30_000)
    expect(page.locator(".toast-body")).to_have_count(0)
    visit.shot("multilingual-model")
    page.close()


#: The words around the prompt: its label, the privacy line under it, the arena's label, and
#: the players' labels.
PROMPT_WORDS = ["#prompt-in [data-testid=block-info]", "#prompt-in .info-text",
                "#arena-in [data-testid=block-info]", "#audio-A [data-testid=block-label]"]  # fmt: skip


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_privacy_line_and_labels_are_readable(running_app, browser, theme):
    """The line under the prompt says the prompt is published: it was 2.6:1 on white."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), f"labels-{theme}")
    page = visit.page
    visit.arrive(running_app.url + f"?__theme={theme}")
    assert page.evaluate("document.body.classList.contains('dark')") == (theme == "dark")
    expect(page.locator("#prompt-in .info-text")).to_contain_text("published with your vote")
    assert low_contrast(page, PROMPT_WORDS) == {}
    visit.shot("prompt")
    page.close()
