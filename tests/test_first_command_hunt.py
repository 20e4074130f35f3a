"""Found by following the README's first command as a new user, on a fresh clone.

* Pressing *New battle* (or N) again while a battle was still being made left the page on
  "Making both outputs…" for good: the first battle came back stale (a newer one was asked
  for) and Gradio dropped the second battle's request, a ``.then`` step with the default
  trigger mode "once", which ignores a submission while the step's last one is pending. A
  typed prompt (held for the slowest voice's time) or a prompt the warm-up had not reached
  yet made it happen on every double press of N.
* The model report (``python -m arena_core model``) printed ``prior - (none , no source)``
  for a model without a prior: every shipped model.
* The README's first command installs into ``.venv`` and never says to use it: every later
  ``python -m arena_core ...`` then failed with ``ModuleNotFoundError: No module named
  'pyarrow'`` (or whatever the system Python lacked).
"""

import re
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def slow_first_battle(monkeypatch, service, seconds: float) -> threading.Event:
    """The first battle asked for takes ``seconds`` longer; the event is set once it began."""
    real, seen, lock, began = service.new_battle, [0], threading.Lock(), threading.Event()

    def new_battle(*args, **kwargs):
        with lock:
            seen[0] += 1
            first = seen[0] == 1
        if first:
            began.set()
            time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "new_battle", new_battle)
    return began


@pytest.mark.browser
def test_new_battle_pressed_again_while_one_is_made_opens_the_second(
    running_app, browser, monkeypatch
):
    from browser import LAPTOP, Visit, expect

    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "first-command-double-n")
    page = visit.page
    visit.arrive(running_app.url)
    began = slow_first_battle(monkeypatch, running_app.service, 4.0)
    visit.key("n")
    assert began.wait(30), "the first battle never reached the server"
    expect(page.locator('#gate .gate[data-stage="working"]')).to_be_visible()
    visit.key("n")  # asked again while the first is being made
    # Before the fix the second battle's request was dropped by the page and the first came
    # back stale: the gate said "Making both outputs…" for good.
    visit.battle_ready(timeout=30_000)
    expect(page.locator("#prompt-shown textarea")).not_to_have_value("")
    visit.shot("second-battle-open")
    page.close()


def test_every_battle_request_step_takes_a_submission_while_one_is_pending(tmp_path):
    """The cheap check behind the browser test: no backend step that opens a battle is
    left with Gradio's "once" trigger mode, under which the page drops a second request."""
    import gradio as gr
    from fakes import build_steady_service

    import app
    from arena_core.space.config import Settings

    settings = Settings(registry=ROOT / "registry.yaml", data_dir=tmp_path, voter_salt="salt")
    service = build_steady_service(settings, env={})
    demo = app.build_demo(service, settings, app.clip_store(settings))
    assert isinstance(demo, gr.Blocks)
    starts = [d for d in demo.fns.values() if getattr(d.fn, "__name__", "") == "page_start"]
    assert len(starts) == 1
    assert starts[0].trigger_mode != "once"


def test_the_model_report_of_a_model_without_a_prior_says_so_plainly(tmp_path):
    import json

    from arena_core.analysis.model_commands import model_table
    from arena_core.analysis.model_report import MODEL_COLUMNS, model_report
    from arena_core.registry import load_registry
    from arena_core.votes.read import read_votes

    votes = tmp_path / "votes.jsonl"
    row = {"schema_version": 4, "vote_id": "v1", "ts": "2026-11-29T17:34:36.123Z",
           "arena": "tts-en", "model_a": "pico/en-US", "model_b": "espeak-ng/en-us",
           "vote": "a", "voter": "h1", "voter_kind": "human"}  # fmt: skip
    votes.write_text(json.dumps(row) + "\n")
    arena = load_registry(ROOT / "registry.yaml").arena("tts-en")
    table = read_votes([votes], columns=MODEL_COLUMNS)
    report = model_report(table, "tts-en", "pico/en-US", arena=arena)
    line = next(x for x in model_table(report).splitlines() if x.startswith("prior"))
    assert line == "prior none"


def test_the_readme_says_to_use_the_environment_its_first_command_made():
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)\n```\n", readme, re.S)
    assert ".venv/bin/pip install -r requirements.txt" in first.group(1)
    after = readme[first.end() :].strip().split("\n\n")[0]  # the paragraph under it
    assert "source .venv/bin/activate" in after and "python -m arena_core" in after
