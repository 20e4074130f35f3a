"""A hunt on the model author's path: "what is my model's rank, how sure is it, where does it
lose, and can I trust it", through the CLI's ``model`` report and the Space's Model view.

Each test is a defect found by trying what an author would, and fails without its fix.
"""

import json
import os

import pytest

from arena_core.analysis.model_report import MODEL_COLUMNS, model_report
from arena_core.cli import main
from arena_core.page import model_html
from arena_core.registry import load_registry
from arena_core.votes.read import read_votes


def row(k, a, b, vote, **extra):
    return {"schema_version": 3, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
            "ts": f"2026-10-01T00:00:{k:02d}.000Z", "arena": "speech", "model_a": a,
            "model_b": b, "vote": vote, "prompt_id": f"p{k}", "prompt": f"text {k}",
            "category": "en", "voter": f"v{k}", "voter_kind": "human", "flags": []} | extra  # fmt: skip


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


REGISTRY = """
arenas:
  - id: speech
    title: Speech
    modality: audio
    prompts: [{id: p0, text: "Hello there."}]
    models:
      - {id: x, name: X model, backend: {type: espeak, voice: en-us}}
      - {id: y, name: Y model, backend: {type: espeak, voice: en-us}}
      - {id: z, name: Newcomer, backend: {type: espeak, voice: en-us}}
"""


def test_a_model_without_votes_says_so_instead_of_an_empty_table(tmp_path):
    """A model just added to an arena that already has votes: its Model view showed "Against
    each opponent" over a table with headers and no row. The page meant to say "No votes for
    it yet." but asked whether the *arena* had no votes (``votes_used`` is the arena's) and
    no board row (a registry model always has one), so it never said it."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    arena = load_registry(tmp_path / "registry.yaml").arena("speech")
    log = write(tmp_path / "votes.jsonl", [row(0, "x", "y", "a"), row(1, "y", "x", "tie")])
    report = model_report(read_votes(log, columns=MODEL_COLUMNS), "speech", "z", arena=arena)
    assert report.votes_used == 2 and report.board_row.battles == 0 and not report.opponents
    html = model_html.model_html(report, {m.id: m.name for m in arena.models})
    assert "No votes for it yet." in html and html.startswith('<div class="model-view">')
    assert "Against each opponent" not in html and "<tbody></tbody>" not in html
    # A model with votes keeps its tables.
    played = model_report(read_votes(log, columns=MODEL_COLUMNS), "speech", "x", arena=arena)
    assert "Against each opponent" in model_html.model_html(played, {})


def test_the_model_view_says_the_rank_and_what_the_rating_rests_on_in_words(tmp_path):
    """An author's first question is the rank, which the view left out (only the CLI's JSON
    had it), and the view named the rating's provenance by its internal key ("provenance:
    arena_thin") where the board's badge says "provisional"."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    arena = load_registry(tmp_path / "registry.yaml").arena("speech")
    votes = [row(k, "x", "y", "a") for k in range(6)] + [row(6, "z", "y", "b")]
    log = write(tmp_path / "votes.jsonl", votes)
    report = model_report(read_votes(log, columns=MODEL_COLUMNS), "speech", "x", arena=arena)
    html = model_html.summary_html(report, {})
    row_ = report.board_row
    band = str(row_.rank) if row_.rank == row_.rank_worst else f"{row_.rank}–{row_.rank_worst}"
    assert f"rank <b>{band}</b>" in html
    assert "arena_thin" not in html and "provisional: the arena&#x27;s votes only" in html


def test_the_model_table_prints_names_a_terminal_would_garble_quoted(tmp_path, capsys):
    """Without ``--registry`` the report names models by the ids in the votes, which any
    string may be. The ``leaderboard`` table prints an id with a control character quoted
    with JSON's escapes (session 31); the ``model`` table printed it raw: a newline in an
    opponent's id broke its row into two (a fake row "| 99 | 1.00" under it), and an escape
    sequence recoloured the author's terminal. A prompt holding a newline did the same to
    the recent battles."""
    odd, red = "y\n| 99 | 1.00", "z\x1b[31mred"
    log = write(tmp_path / "votes.jsonl", [
        row(0, "x", odd, "a"), row(1, odd, "x", "tie", prompt="line one\nline two"),
        row(2, "x", red, "b")])  # fmt: skip
    assert main(["model", "--votes", str(log), "--arena", "speech", "--model", "x"]) == 0
    text = capsys.readouterr().out
    assert all(ch.isprintable() or ch == "\n" for ch in text), repr(text)
    opponents = text.split("opponent | battles")[1].split("\n\n")[0].splitlines()[1:]
    assert len(opponents) == 2  # one line per opponent
    assert json.dumps(odd) in text and json.dumps(red) in text
    recent = text.split("recent battles:")[1].strip().splitlines()[1:]
    assert len(recent) == 3 and json.dumps("line one\nline two") in text
    assert "| x | " not in text and "X model" not in text  # plain ids stay as they are
    assert text.startswith("x (x) in speech")


#: Two arenas whose models run here, and one whose hosted models cannot (no token, offline),
#: with votes from a time when they could.
THREE_ARENAS = """
arenas:
  - id: tts
    title: TTS
    modality: audio
    prompts: [{id: p1, text: "Hello there."}]
    models:
      - {id: m0, name: Zero, backend: {type: espeak, voice: en-us}}
      - {id: m1, name: One, backend: {type: espeak, voice: en-us}}
  - id: chat
    title: Chat arena
    modality: text
    prompts: [{id: q1, text: "Hi?"}]
    models:
      - {id: org/c0, name: Chat Zero, backend: {type: hf-inference, model: org/c0}}
      - {id: org/c1, name: Chat One, backend: {type: hf-inference, model: org/c1}}
  - id: tts2
    title: Second TTS
    modality: audio
    prompts: [{id: p1, text: "Hello there."}]
    models:
      - {id: n0, name: Second Zero, backend: {type: espeak, voice: en-us}}
      - {id: n1, name: Second One, backend: {type: espeak, voice: en-us}}
"""


@pytest.fixture(scope="module")
def three_arenas(tmp_path_factory):
    from conftest import serving

    from arena_core.space.config import Settings
    from arena_core.space.startup import build_service
    from arena_core.votes.log import VoteLog

    root = tmp_path_factory.mktemp("model-link")
    (root / "registry.yaml").write_text(THREE_ARENAS)
    log = VoteLog(root / "data" / "votes")
    for k in range(6):
        for arena, a, b in (
            ("tts", "m0", "m1"),
            ("chat", "org/c0", "org/c1"),
            ("tts2", "n0", "n1"),
        ):
            log.append(arena=arena, model_a=a, model_b=b, vote="ab"[k % 2], voter=f"{arena}{k}")
    settings = Settings(registry=root / "registry.yaml", data_dir=root / "data",
                        voter_salt="salt", listen_share=0.0, warmup=False)  # fmt: skip
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    service.load()
    with serving(service, settings) as (url, _):
        yield url, service


def open_link(browser, url: str, model: str, name: str):
    from browser import LAPTOP, Visit

    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), name)
    visit.page.goto(f"{url}?model={model}")
    return visit


@pytest.mark.browser
def test_a_shared_link_to_a_model_whose_arena_is_not_offered_here_opens_its_page(
    three_arenas, browser
):
    """``?model=org/c0``, a chat model whose hosted arena cannot run on this server (no
    token) but whose votes are on the board: the link set the Arena picker to that arena
    without listing it among the picker's choices (only the arenas offered here), and every
    event after it failed in Gradio ("Value: chat is not in the list of choices"): the Arena
    and Model pickers and the board showed "Error" instead of the model's page."""
    from browser import expect

    url, service = three_arenas
    assert service.board("chat").votes_used == 6
    assert sorted(service.unavailable("chat")) == ["org/c0", "org/c1"]  # not offered here
    visit = open_link(browser, url, "org/c0", "model-link-absent-arena")
    page = visit.page
    table = page.locator("#board-table")
    expect(table).to_contain_text("Chat Zero (org/c0)", timeout=60_000)
    expect(table).to_contain_text("Against each opponent")
    expect(page.locator("#board-arena input")).to_have_value("Chat arena")
    page.wait_for_timeout(1000)
    assert not page.get_by_text("Error", exact=True).count()
    visit.shot("opened")


@pytest.mark.browser
def test_a_shared_link_opens_the_linked_model_not_its_arenas_first(three_arenas, browser):
    """``?model=n1``, the second model of the second arena: the page opened the page of
    ``n0``, the arena's first model. The link's answer sets the arena and the Model picker
    together, but the arena's change handler ran with the picker's old value (the first
    arena's ``m0``), found it not in this arena, and picked the arena's first model. (The
    existing link tests open the first arena, or an arena's first model, where this hides.)"""
    from browser import expect

    url, _ = three_arenas
    visit = open_link(browser, url, "n1", "model-link-second-model")
    page = visit.page
    table = page.locator("#board-table")
    expect(table).to_contain_text("Against each opponent", timeout=60_000)
    expect(page.locator("#board-arena input")).to_have_value("Second TTS")
    page.wait_for_timeout(2000)  # every answer of the page's load is in
    expect(table).to_contain_text("Second One (n1)")
    expect(page.locator("#board-model input")).to_have_value("Second One")
    visit.shot("opened")


def test_the_model_view_names_the_group_of_a_rank_when_the_board_has_several(tmp_path):
    """A rank compares only within a comparison group: the board's table says "1 (group 1)"
    when the votes form several, and the view said "1" for group 1 (review of session 32)."""
    votes = [row(k, "x", "y", "a") for k in range(4)] + [
        row(4 + k, "p", "q", "b") for k in range(3)
    ]
    log = write(tmp_path / "votes.jsonl", votes)
    report = model_report(read_votes(log, columns=MODEL_COLUMNS), "speech", "x")
    assert report.groups == 2 and report.board_row.component == 1
    assert "(group 1)" in model_html.summary_html(report, {})
    alone = write(tmp_path / "alone.jsonl", votes[:4])
    single = model_report(read_votes(alone, columns=MODEL_COLUMNS), "speech", "x")
    assert single.groups == 1 and "(group" not in model_html.summary_html(single, {})
