"""Measured real-time factors: read tolerantly from bench/rtf.py's file, shown on the About tab."""

import json
from pathlib import Path

from arena_core.leaderboard import BoardParams
from arena_core.page import speed, ui_text
from arena_core.registry import load_registry

ROOT = Path(__file__).resolve().parent.parent


def test_rtf_file_is_read_and_bad_rows_are_skipped(tmp_path):
    path = tmp_path / "rtf.json"
    rows = [{"model": "a", "rtf": 0.5}, {"model": "b", "rtf": "fast"}, {"rtf": 1.0},
            {"model": "c", "rtf": float("nan")}, "junk", {"model": "d", "rtf": True}]  # fmt: skip
    path.write_text(json.dumps({"machine": {"summary": "2 cores"}, "rows": rows}), encoding="utf-8")
    assert speed.load_rtf(path) == {"a": 0.5}
    assert speed.machine_note(path) == "2 cores"


def test_missing_or_broken_file_gives_no_figures(tmp_path):
    assert speed.load_rtf(tmp_path / "absent.json") == {}
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    assert speed.load_rtf(tmp_path / "broken.json") == {}
    assert speed.machine_note(tmp_path / "broken.json") == ""


def test_the_shipped_file_covers_every_local_speech_model_and_about_shows_it():
    registry = load_registry(ROOT / "registry.yaml")
    rtf = speed.load_rtf()
    local = {m.id for a in registry.arenas if a.modality == "audio" for m in a.models
             if m.backend.type not in {"hf-inference", "gradio-space"}}  # fmt: skip
    assert set(rtf) == local
    text = ui_text.about(registry, BoardParams(), {}, rtf, "2 cores")
    assert "| `kokoro-82m/jf_alpha` | 82M |" in text
    assert f"| {rtf['kokoro-82m/jf_alpha']:.2f} |" in text
    assert "`python bench/rtf.py` (2 cores)" in text
