"""The model page plays its recent battles' clips, and every board names its revision.

The app runs on three eSpeak NG voices (offline, from PyPI); a few battles are fought
through the service, so the blinder's cache holds their shaped clips. Debian's Chromium
then opens a model's page and plays them; screenshots are saved under tests/output/.
"""

import os
from dataclasses import replace

import numpy as np
import pytest
from browser import LAPTOP, Visit, expect
from conftest import serving
from fakes import build_steady_service
from hubfake import PROMPTS, REGISTRY

from arena_core.page.model_audio import AUDIO_BATTLES, heard_battles

#: The <audio> element of a player by its elem_id (Gradio keeps it in a shadow root).
PLAYER = """id => { const box = document.getElementById(id);
  for (const el of box.querySelectorAll("*")) { const a = el.shadowRoot && el.shadowRoot.querySelector("audio");
    if (a) return a; } return box.querySelector("audio"); }"""


@pytest.fixture(scope="module")
def audio_app(tmp_path_factory):
    from arena_core.space.config import Settings

    root = tmp_path_factory.mktemp("model-audio")
    (root / "registry.yaml").write_text(REGISTRY)
    (root / "prompts.yaml").write_text(PROMPTS)
    settings = Settings(registry=root / "registry.yaml", data_dir=root / "data",
                        voter_salt="salt", listen_share=0.0, warmup=False)  # fmt: skip
    # Eight votes of one voter: stamped steadily, the anomalous-voter test never flags them.
    service = build_steady_service(settings, env={"PATH": os.environ.get("PATH", "")})
    service.load()
    for k in range(8):
        view = service.new_battle("speech", ("Good morning.", "One two three.")[k % 2])
        service.vote(view.handle, ("a", "b", "tie")[k % 3], voter="v")
    with serving(service, settings) as (url, _):
        yield service, url


def test_heard_battles_are_the_clips_the_listeners_got(audio_app):
    service, _ = audio_app
    report = service.analyses.model("speech", "espeak/en-us")
    pool = service.pools["speech"]
    heard = heard_battles(report, pool, service.blinder)
    mine = [b for b in report.recent if b.prompt]
    assert 0 < len(heard) <= AUDIO_BATTLES and len(heard) == min(len(mine), AUDIO_BATTLES)
    assert [h.battle for h in heard] == mine[: len(heard)]  # newest first
    for h in heard:  # the same engine output, shaped again, is the clip shown
        for model_id, clip in ((report.model, h.own), (h.battle.opponent, h.other)):
            output = pool.generate(model_id, h.battle.prompt, pool.language_of(h.battle.category))
            again = service.blinder.prepare(output)  # keyed by its samples, not the cache key
            assert clip.sample_rate == again.sample_rate == 24_000
            assert np.array_equal(clip.samples, again.samples)
    assert heard_battles(report, pool, None) == [] and heard_battles(report, None, object()) == []
    assert {h.battle.version for h in heard} == {pool.model_version("espeak/en-us")} != {None}
    # A vote recorded under another engine version: today's clip is not what was voted on.
    updated = replace(report, recent=tuple(replace(b, opponent_version="1.0-old")
                                           for b in report.recent))  # fmt: skip
    assert heard_battles(updated, pool, service.blinder) == []


def test_the_model_page_plays_its_recent_battles(audio_app, browser):
    service, url = audio_app
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "model-audio")
    page = visit.page
    page.goto(url + "?model=espeak/en-us")
    expect(page.locator("#board-table")).to_contain_text("Against each opponent", timeout=60_000)
    expect(page.locator("#model-heard")).to_be_visible(timeout=30_000)
    expect(page.locator("#model-heard-0 .heard-line b")).to_contain_text("UTC")  # HTML, as text
    report = service.analyses.model("speech", "espeak/en-us")
    shown = len(heard_battles(report, service.pools["speech"], service.blinder))
    for k in range(AUDIO_BATTLES):
        for side in ("own", "other"):
            box = page.locator(f"#model-heard-{k}-{side}")
            if k >= shown:
                expect(box).to_be_hidden()
                continue
            expect(box).to_be_visible()
            page.wait_for_function(f"() => {{ const a = ({PLAYER})('model-heard-{k}-{side}');"
                                   " return a && a.readyState >= 1 && a.duration > 0.3; }",
                                   timeout=30_000)  # fmt: skip
    played = page.evaluate(f"""async () => {{ const a = ({PLAYER})('model-heard-0-own');
        a.muted = true; await a.play(); await new Promise(r => setTimeout(r, 600));
        const t = a.currentTime; a.pause(); return t; }}""")
    assert played > 0.1
    visit.shot("model")
    page.locator("#board-view").get_by_text("Votes").click()
    footer = page.locator("#board-table .board-revision")
    expect(footer).to_contain_text("Computed from the local vote log: 8 votes", timeout=30_000)
    expect(footer).to_contain_text("python -m arena_core leaderboard --votes data/votes")
    visit.shot("board")
