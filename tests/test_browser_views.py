"""The Leaderboard tab's style-controlled and judges' views, in Debian's Chromium.

The app runs on a small registry whose log was simulated with known truth
(tests/test_analysis_boards.py: voters who like long clips, a judge with a position
bias), so both views have something to show; screenshots of each are saved.
"""

import os
import textwrap

import pytest
from browser import LAPTOP, Visit, expect
from conftest import serving
from test_analysis_boards import REGISTRY, simulate


@pytest.fixture(scope="module")
def views_app(tmp_path_factory):
    from arena_core.space.config import Settings
    from arena_core.space.startup import build_service

    root = tmp_path_factory.mktemp("views")
    (root / "registry.yaml").write_text(textwrap.dedent(REGISTRY))
    simulate(root / "data" / "votes", humans=1500, battles=300)
    settings = Settings(registry=root / "registry.yaml", data_dir=root / "data",
                        voter_salt="salt", listen_share=0.0, warmup=False)  # fmt: skip
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    service.load()
    with serving(service, settings) as (url, _):
        yield url


def test_the_style_and_judges_views(views_app, browser):
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "views")
    page = visit.page
    page.goto(views_app)
    page.get_by_role("tab", name="Leaderboard").click()
    expect(page.locator("#board-table")).to_contain_text("Zero", timeout=30_000)
    visit.shot("votes")
    page.locator("#board-view").get_by_text("Style-controlled").click()
    table = page.locator("#board-table")
    expect(table).to_contain_text("speech duration", timeout=30_000)
    expect(table).to_contain_text("1500 human votes used")
    visit.shot("style")
    page.locator("#board-view").get_by_text("Judges").click()
    expect(table).to_contain_text("First", timeout=30_000)
    expect(table).to_contain_text("Human voters' side-A term")
    visit.shot("judges")
    page.locator("#board-view").get_by_text("Complementarity").click()
    expect(table).to_contain_text("Shared prompts", timeout=60_000)
    expect(table).to_contain_text("1500 human votes over 20 prompts")
    visit.shot("complementarity")
    page.locator("#board-view").get_by_text("Model").click()
    expect(table).to_contain_text("Against each opponent", timeout=60_000)
    expect(page.locator("#chart-ratings")).to_be_visible()
    visit.shot("model")


def test_a_shared_link_opens_a_models_page(views_app, browser):
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "model-link")
    page = visit.page
    page.goto(views_app + "?model=m2")
    table = page.locator("#board-table")
    expect(table).to_contain_text("Two (m2)", timeout=60_000)
    expect(table).to_contain_text("Against each opponent")
    expect(page.get_by_role("tab", name="Leaderboard")).to_have_attribute("aria-selected", "true")
    visit.shot("opened")
