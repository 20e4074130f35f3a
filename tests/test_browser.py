"""A visitor's path in a real browser: Debian's Chromium driven by Playwright.

scripts/test.sh installs Chromium and sets ARENA_REQUIRE_BROWSER=1, so there a
missing browser fails the run instead of skipping it.
"""

import os
import re
import shutil

import pytest

pytestmark = pytest.mark.browser

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Flags for a headless Chromium on a machine with no network but loopback.
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("ARENA_REQUIRE_BROWSER"):
            pytest.fail("Chromium is required here but /usr/bin/chromium is missing")
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_board(page, arena="tts-en", votes=None) -> int:
    """Open the Leaderboard tab and read how many votes the board counts (waiting for ``votes``)."""
    page.get_by_role("tab", name="Leaderboard").click()
    summary = page.locator(f"#summary-{arena}")
    number = r"\d+" if votes is None else str(votes)
    counted = re.compile(r"(^|\s)" + number + " votes counted")
    sync_api.expect(summary).to_have_text(counted, timeout=20_000)
    return int(re.search(r"(\d+) votes counted", summary.inner_text()).group(1))


def test_visitor_battles_listens_votes_and_sees_the_board_change(running_app, browser):
    ids = [m.id for m in running_app.service.registry.arena("tts-en").models]
    page = browser.new_page()
    page.goto(running_app.url)
    before = open_board(page)

    page.get_by_role("tab", name="Arena").click()
    page.get_by_role("button", name="New battle").click()
    for side in "AB":
        page.get_by_test_id(f"waveform-Model {side}").locator("audio").wait_for(
            state="attached", timeout=60_000
        )
    expect = sync_api.expect
    expect(page.locator("#status")).to_contain_text("Listen to both clips", timeout=30_000)
    for choice in ("a", "b", "tie", "both_bad"):
        expect(page.locator(f"#vote-{choice}")).to_be_disabled()

    # Before the vote, nothing on the page names a model of this arena...
    shown = page.evaluate("document.body.innerText")
    assert not [i for i in ids if i in shown]
    # ...nor do the audio files' addresses.
    sources = page.locator("a[download]").evaluate_all("els => els.map(e => e.href)")
    assert len(sources) >= 2 and not [s for s in sources for i in ids if i in s]

    for side in "AB":  # listen to both clips to the end
        page.locator(f"#audio-{side}").get_by_label("Play", exact=True).click()
    expect(page.locator("#vote-a")).to_be_enabled(timeout=60_000)
    page.locator("#vote-a").click()

    status = page.locator("#status")
    expect(status).to_contain_text("You voted A is better", timeout=20_000)
    revealed = re.findall(r"\(([^()\s]+/[^()\s]+)\)", status.inner_text())
    assert len(revealed) == 2 and set(revealed) <= set(ids)
    assert not [i for i in revealed if i in shown]  # the revealed pair was hidden before
    expect(page.get_by_role("button", name="Next battle")).to_be_visible()
    expect(page.locator("#vote-b")).to_be_disabled()

    open_board(page, votes=before + 1)
    table = page.locator("#board-tts-en").inner_text()
    names = [running_app.service.registry.arena("tts-en").model(i).name for i in revealed]
    assert all(n in table for n in names)
    page.close()


def test_typed_prompt_and_refusal_messages(running_app, browser):
    page = browser.new_page()
    page.goto(running_app.url)
    page.get_by_label("Prompt", exact=True).fill("x" * (running_app.settings.max_prompt_chars + 5))
    page.get_by_role("button", name="New battle").click()
    sync_api.expect(page.get_by_text("the limit is")).to_be_visible(timeout=20_000)
    page.get_by_label("Prompt", exact=True).fill("Hello from the browser test.")
    page.get_by_role("button", name="New battle").click()
    sync_api.expect(page.get_by_label("Prompt of this battle")).to_have_value(
        "Hello from the browser test.", timeout=60_000
    )
    page.close()
