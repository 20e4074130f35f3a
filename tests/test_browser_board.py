"""The Leaderboard tab at its first votes, in Debian's Chromium: filters, charts, phone widths
and dark mode.

The app runs on the shipped registry with a short log like a first visitor's (15 votes in
the English arena, one in the multilingual one, none in the Japanese one): every model that
played is provisional, which is where a board is hardest to read.
"""

import os
from itertools import pairwise

import pytest
from browser import LAPTOP, PHONE, Visit, expect
from conftest import ROOT, serving

#: (model A, model B, vote) of the English arena's votes: every local model plays.
VOTES = [
    ("flite/rms", "pico/en-US", "a"), ("espeak-ng/en-us+f3", "flite/awb", "a"),
    ("festival/kal_diphone", "flite/kal", "a"), ("flite/rms", "pico/en-GB", "b"),
    ("espeak-ng/en-gb-x-rp", "flite/kal16", "tie"), ("flite/slt", "flite/awb", "tie"),
    ("espeak-ng/en+klatt", "piper/en_US-joe-medium", "both_bad"),
    ("espeak-ng/en-gb-x-rp", "festival/cmu_us_slt_arctic_hts", "a"),
    ("flite/awb", "espeak-ng/en-us", "b"), ("espeak-ng/en+klatt", "espeak-ng/en-gb-x-rp", "a"),
    ("pico/en-US", "flite/slt", "b"), ("flite/kal16", "espeak-ng/en-us", "tie"),
    ("flite/slt", "festival/kal_diphone", "both_bad"),
    ("espeak-ng/en-gb-x-rp", "festival/kal_diphone", "b"),
    ("festival/cmu_us_slt_arctic_hts", "piper/en_US-joe-medium", "a"),
]  # fmt: skip
#: The models of those votes.
PLAYED = {m for a, b, _ in VOTES for m in (a, b)}


def seed(folder) -> None:
    from arena_core.votes.log import VoteLog

    log = VoteLog(folder)
    style = {"model_a_duration_s": 3.1, "model_b_duration_s": 2.7, "model_a_speech_rate": 2.4,
             "model_b_speech_rate": 2.6, "model_a_lufs": -23.0, "model_b_lufs": -23.1,
             "model_a_sample_rate": 16000, "model_b_sample_rate": 22050}  # fmt: skip
    for k, (a, b, vote) in enumerate(VOTES):
        log.append(arena="tts-en", model_a=a, model_b=b, vote=vote, prompt_id=f"en-{k:03d}",
                   voter=f"v{k}", **style)  # fmt: skip
    log.append(arena="tts-multilingual", model_a="espeak-ng/multilingual",
               model_b="pico/multilingual", vote="both_bad", prompt_id="en-001", voter="w",
               **style)  # fmt: skip
    log.close()


@pytest.fixture(scope="module")
def first_votes(tmp_path_factory):
    from arena_core.space.config import Settings
    from arena_core.space.startup import build_service

    data = tmp_path_factory.mktemp("first-votes")
    seed(data / "votes")
    settings = Settings(registry=ROOT / "registry.yaml", data_dir=data, voter_salt="salt",
                        listen_share=0.0, warmup=False)  # fmt: skip
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    service.load()
    with serving(service, settings) as (url, _):
        yield url


def board(browser, url: str, name: str, viewport=LAPTOP, scheme: str = "light") -> Visit:
    """A visitor on the Leaderboard tab of ``url``, its table and charts drawn."""
    visit = Visit(browser.new_page(viewport=viewport, locale="en-US", color_scheme=scheme), name)
    visit.arrive(url)
    visit.page.get_by_role("tab", name="Leaderboard").click()
    expect(visit.page.locator("#board-table")).to_contain_text("provisional", timeout=30_000)
    return visit


#: Model names on the rating chart (one per row), as drawn: tick labels or annotations.
NAMES = ".ytick text, .annotation-text"


def test_the_charts_show_the_models_the_table_shows(first_votes, browser):
    """The charts drew every model that played whatever the filters: with provisional
    models hidden the table said "No model matches these filters." under three charts of
    14 models, and Weights narrowed the table only."""
    visit = board(browser, first_votes, "board-filters")
    page, table = visit.page, visit.page.locator("#board-table")
    charts = [page.locator(c) for c in ("#chart-ratings", "#chart-wins", "#chart-battles")]
    names = charts[0].locator(NAMES)
    expect(names).to_have_count(len(PLAYED))
    for k, option in enumerate(("Open licence", "Other licence")):
        page.locator("#board-weights").get_by_text(option, exact=True).click()
        page.wait_for_timeout(1500)
        rated = table.locator("tbody tr:not(.section):not(.unrated)").count()
        if rated:
            expect(names).to_have_count(rated)
            for chart in charts[1:]:
                expect(chart.locator(".ytick text")).to_have_count(rated)
        else:
            for chart in charts:
                expect(chart).to_be_hidden()
        visit.shot(f"weights-{k + 1}")
    page.locator("#board-weights").get_by_text("All", exact=True).click()
    expect(names).to_have_count(len(PLAYED))
    page.locator("#board-tab").get_by_label("Include provisional and unrated models").uncheck()
    expect(table).to_contain_text("No model matches these filters.")
    for chart in charts:
        expect(chart).to_be_hidden()
    visit.shot("no-provisional")


#: The ratings chart's plot area and the names drawn on it (tick labels or annotations).
RATINGS_LAYOUT = """() => { const c = document.querySelector('#chart-ratings');
  const box = e => e.getBoundingClientRect();
  const names = [...c.querySelectorAll('.ytick text, .annotation-text')].filter(t => box(t).width > 0);
  return {chart: box(c.querySelector('.main-svg')).toJSON(), plot: box(c.querySelector('.nsewdrag')).toJSON(),
          names: names.map(t => ({text: t.textContent, ...box(t).toJSON()})),
          ticks: [...c.querySelectorAll('.xtick text')].filter(t => box(t).width > 0).length}; }"""


def test_the_rating_chart_reads_on_a_phone(first_votes, browser):
    """Two-line names beside the plot took 300 of a phone's 390 pixels: the intervals had a
    sliver and the rating ticks stood on end. Names now sit above their rows."""
    visit = board(browser, first_votes, "board-phone", viewport=PHONE)
    chart = visit.page.locator("#chart-ratings")
    expect(chart.locator(".main-svg").first).to_be_visible(timeout=20_000)
    chart.scroll_into_view_if_needed()
    layout = visit.page.evaluate(RATINGS_LAYOUT)
    chart_box, plot = layout["chart"], layout["plot"]
    assert plot["width"] >= 0.8 * chart_box["width"], layout
    names = layout["names"]
    assert {n["text"] for n in names} >= {"Festival (kal, diphone)", "SVOX Pico (US English)"}
    assert len(names) == len(PLAYED)
    for n in names:  # every name whole, on one line, inside the chart
        assert chart_box["left"] <= n["left"] and n["right"] <= chart_box["right"], n
        assert n["height"] < 25, n
    rows = sorted(names, key=lambda n: n["top"])
    assert all(a["bottom"] <= b["top"] for a, b in pairwise(rows))
    assert layout["ticks"] >= 5  # the rating axis keeps its numbers
    visit.shot("board")


#: Per heatmap: the column names' tick positions, angle and height (of all their lines).
COLUMN_LABELS = """sel => [...document.querySelectorAll(sel + ' .xtick text')].map(t => {
  const tr = t.getAttribute('transform') || '';
  const x = parseFloat((tr.match(/translate\\(([-\\d.]+)/) || [0, 0])[1]);
  const angle = parseFloat((tr.match(/rotate\\(([-\\d.]+)/) || [0, 0])[1]);
  return {x, angle, height: t.getBBox().height, text: t.textContent}; })"""


@pytest.mark.parametrize("chart", ["#chart-wins", "#chart-battles"])
def test_the_heatmaps_column_names_do_not_run_into_each_other(first_votes, browser, chart):
    """Two-line names at -35° overlapped their neighbours on a laptop. Neighbouring rotated
    names clear each other when the columns' spacing across the text's direction is at
    least the text's height."""
    import math

    visit = board(browser, first_votes, "board-heatmap")
    expect(visit.page.locator(f"{chart} .main-svg").first).to_be_visible(timeout=20_000)
    labels = visit.page.evaluate(COLUMN_LABELS, chart)
    assert len(labels) == len(PLAYED)
    for a, b in pairwise(labels):
        gap = abs(b["x"] - a["x"]) * abs(math.sin(math.radians(a["angle"] or 90)))
        assert gap >= max(a["height"], b["height"]), (a, b, gap)
    visit.page.locator(chart).scroll_into_view_if_needed()
    visit.shot(chart.removeprefix("#"))


#: Per About table: its box and the About column's, and the words of its cells (runs of
#: letters and digits: a break at a hyphen or a slash is fine) that a line break cut in two.
ABOUT_TABLES = """() => { const about = document.querySelector('#about-tab');
  return [...about.querySelectorAll('table')].map(t => {
    const cut = [];
    for (const td of t.querySelectorAll('td')) {
      const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const re = /[\\p{L}\\p{N}]+/gu; let m;
        while ((m = re.exec(n.textContent))) {
          const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
          const lines = new Set([...r.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top)));
          if (lines.size > 1) cut.push(m[0]);
        } } }
    return {right: t.getBoundingClientRect().right, column: about.getBoundingClientRect().right,
            scrolls: t.scrollWidth > t.clientWidth + 1, cut}; }); }"""


def test_the_about_tables_scroll_on_their_own_on_a_phone(first_votes, browser):
    """The model tables were 698 px wide in a 370 px column and broke names letter by letter
    ("Festiva/l"). Each table now scrolls inside the column, words whole."""
    visit = Visit(browser.new_page(viewport=PHONE, locale="en-US"), "about-phone")
    visit.arrive(first_votes)
    visit.page.get_by_role("tab", name="About").click()
    about = visit.page.locator("#about-tab")
    expect(about.get_by_role("heading", name="Models and licences")).to_be_visible()
    tables = visit.page.evaluate(ABOUT_TABLES)
    assert tables
    for t in tables:
        assert t["right"] <= t["column"] + 1, t
        assert t["cut"] == [], t
    assert any(t["scrolls"] for t in tables)  # the wide ones scroll, inside the column
    about.locator("table").first.scroll_into_view_if_needed()
    visit.shot("about-table")


def test_the_model_views_opponent_table_fits_a_phone(first_votes, browser):
    """The "Both bad" column of "Against each opponent" was cut off on a phone, with only a
    thin scrollbar saying there was more."""
    visit = Visit(browser.new_page(viewport=PHONE, locale="en-US"), "model-phone")
    visit.arrive(first_votes + "?model=espeak-ng/en-us")  # a shared link to the model's page
    table = visit.page.locator("#board-table")
    expect(table).to_contain_text("Against each opponent", timeout=30_000)
    wrap = table.locator(".board-wrap").first
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), wrap.evaluate(
        "e => [e.scrollWidth, e.clientWidth]"
    )
    header = wrap.locator("th", has_text="Both bad").bounding_box()
    box = wrap.bounding_box()
    assert header["x"] + header["width"] <= box["x"] + box["width"] + 1
    visit.shot("opponents")


#: The rating chart's box, its title's and its plot area's.
TITLE_LAYOUT = """() => { const c = document.querySelector('#chart-ratings');
  const box = s => c.querySelector(s).getBoundingClientRect().toJSON();
  return {chart: box('.main-svg'), title: box('.gtitle'), plot: box('.nsewdrag'),
          text: c.querySelector('.gtitle').textContent}; }"""


def test_the_model_views_chart_title_fits_a_phone(first_votes, browser):
    """The chart's title, the model's name and "rating as the arena's votes came in" in one
    line, ran off a phone's chart ("eSpeak NG (British English, Received Pronunci"). It now
    breaks into lines, all inside the chart and above the plot."""
    visit = Visit(browser.new_page(viewport=PHONE, locale="en-US"), "model-phone-chart")
    visit.arrive(first_votes + "?model=espeak-ng/en-gb-x-rp")  # the longest name that played
    chart = visit.page.locator("#chart-ratings")
    expect(chart.locator(".gtitle")).to_contain_text("Pronunciation", timeout=30_000)
    chart.scroll_into_view_if_needed()
    layout = visit.page.evaluate(TITLE_LAYOUT)
    box, title = layout["chart"], layout["title"]
    assert box["left"] <= title["left"] and title["right"] <= box["right"], layout
    assert box["top"] <= title["top"] and title["bottom"] <= layout["plot"]["top"], layout
    assert "votes came in" in layout["text"], layout
    visit.shot("chart")


#: The charts' plot areas' fill, and the fill of the rating chart's names.
CHART_COLOURS = """() => ({
  plots: [...document.querySelectorAll('#board-tab .js-plotly-plot .bglayer rect.bg')].map(r =>
    getComputedStyle(r).fillOpacity === '0' ? 'transparent' : getComputedStyle(r).fill),
  names: [...document.querySelectorAll('#chart-ratings .annotation-text, #chart-ratings .ytick text')].map(t => getComputedStyle(t).fill)})"""


def luminance(css: str) -> float:
    """Relative luminance (WCAG) of an rgb() or rgba() colour; None when transparent."""
    import re

    if css == "transparent":
        return None
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    if len(parts) == 4 and parts[3] == 0:
        return None
    channels = [c / 255 for c in parts[:3]]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_the_charts_follow_the_dark_scheme(first_votes, browser):
    """On the dark page the charts' plot areas stayed white (and the names, lit for the dark
    page, were light on white). The plot areas are now the page's own colour."""
    visit = board(browser, first_votes, "board-dark", scheme="dark")
    expect(visit.page.locator("#chart-ratings .main-svg").first).to_be_visible(timeout=20_000)
    colours = visit.page.evaluate(CHART_COLOURS)
    assert len(colours["plots"]) == 3 and colours["names"]
    for fill in colours["plots"]:
        assert luminance(fill) is None or luminance(fill) < 0.2, colours
    assert all(luminance(fill) > 0.5 for fill in colours["names"]), colours
    visit.page.locator("#chart-ratings").scroll_into_view_if_needed()
    visit.shot("charts")


#: Width of the Arena dropdown's text, and the room it has before the arrow.
DROPDOWN_ROOM = """() => { const input = document.querySelector('#board-arena input');
  const icon = document.querySelector('#board-arena .icon-wrap');
  const style = getComputedStyle(input); const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = style.font;
  const start = input.getBoundingClientRect().left + parseFloat(style.paddingLeft);
  return {text: input.value, end: start + ctx.measureText(input.value).width,
          arrow: icon.getBoundingClientRect().left}; }"""


def test_the_arena_title_clears_the_dropdown_arrow(first_votes, browser):
    """On a laptop "Japanese text-to-speech" ran into the Arena dropdown's arrow."""
    visit = board(browser, first_votes, "board-arena-title")
    page = visit.page
    page.locator("#board-arena input").click()
    page.get_by_role("option", name="Japanese text-to-speech", exact=True).click()
    expect(page.locator("#board-table")).to_contain_text("no votes yet", timeout=30_000)
    room = page.evaluate(DROPDOWN_ROOM)
    assert room["text"] == "Japanese text-to-speech" and room["end"] <= room["arrow"], room
    visit.shot("japanese")
