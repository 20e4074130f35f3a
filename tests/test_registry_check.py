"""``python -m arena_core registry --check``: every model without a prior, every problem, exit codes."""

import json
import subprocess
import sys
import textwrap
from datetime import date

import pytest
from conftest import ROOT

from arena_core.cli import main
from arena_core.registry import RegistryError, load_registry
from arena_core.registry.check import NO_PRIOR, check_registry
from arena_core.registry.priors import BENCHMARK_MISMATCH, INVALID, NO_ROUND_TRIP, NO_SOURCE

SOURCE = "https://example.org/paper#table-2"

#: Two arenas: one clean prior (a), a model without one (b), a prior without a source (c),
#: one on another benchmark (d); the second arena's mapping has a zero slope, so its prior (e)
#: is set aside with it, not reported again.
MIXED = textwrap.dedent(f"""
    arenas:
      - id: tts
        title: TTS
        modality: audio
        prior_mapping: {{benchmark: Q, center: 82, points_per_unit: 8}}
        prompts: [{{id: p1, text: Hi}}]
        models:
          - {{id: a, name: A, backend: {{type: espeak, voice: en}}, prior: {{value: 86.5, source: '{SOURCE}', accessed: 2026-03-01}}}}
          - {{id: b, name: B, backend: {{type: espeak, voice: en}}}}
          - {{id: c, name: C, backend: {{type: espeak, voice: en}}, prior: {{value: 80, accessed: 2026-03-01}}}}
          - {{id: d, name: D, backend: {{type: espeak, voice: en}}, prior: {{value: 80, source: '{SOURCE}', accessed: 2026-03-01, benchmark: MOS}}}}
      - id: chat
        title: Chat
        modality: text
        prior_mapping: {{benchmark: Q, center: 0, points_per_unit: 0}}
        prompts: [{{id: p1, text: Hi}}]
        models:
          - {{id: e, name: E, backend: {{type: hf-inference, model: org/m}}, prior: {{value: 3, source: '{SOURCE}', accessed: 2026-03-01}}}}
          - {{id: f, name: F, backend: {{type: hf-inference, model: org/m}}}}
    """)  # fmt: skip


def write(tmp_path, text):
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    return path


def run_check(capsys, path, *extra):
    code = main(["registry", "--check", "--registry", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_problem_is_listed_not_only_the_first(tmp_path, capsys):
    path = write(tmp_path, MIXED)
    with pytest.raises(RegistryError):  # the loader stops at the first problem...
        load_registry(path)
    code, out, _ = run_check(capsys, path, "--format", "json")  # ...the check lists them all
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["models"] == 6
    assert report["without_prior"] == [{"arena": "tts", "model": "b"},
                                       {"arena": "chat", "model": "f"}]  # fmt: skip
    found = [(p["kind"], p["arena"], p["model"], p["field"]) for p in report["problems"]]
    assert found == [
        (NO_SOURCE, "tts", "c", "prior.source"),
        (BENCHMARK_MISMATCH, "tts", "d", "prior.benchmark"),
        (NO_ROUND_TRIP, "chat", None, "prior_mapping.points_per_unit"),
    ]
    assert [(p["model"], p["rating"], p["accessed"]) for p in report["priors"]] == [
        ("a", 1036.0, "2026-03-01")  # 1000 + 8 x (86.5 - 82)
    ]


def test_the_table_says_the_same(tmp_path, capsys):
    code, out, _ = run_check(capsys, write(tmp_path, MIXED))
    assert code == 1
    assert out.splitlines()[0].endswith("6 models, 1 with a sourced prior, 2 without, 3 problem(s)")
    assert "  tts: b" in out and "  chat: f" in out
    assert f"tts / a: Q 86.5 -> rating 1036.0 ({SOURCE}, read 2026-03-01)" in out
    assert "no_source: tts / c, field prior.source: is required" in out
    assert "no_round_trip: chat, field prior_mapping.points_per_unit" in out


def test_models_without_a_prior_alone_pass(tmp_path, capsys):
    clean = MIXED.split("  - id: chat")[0].replace("benchmark: MOS", "benchmark: q")
    clean = clean.replace("{value: 80, accessed", f"{{value: 80, source: '{SOURCE}', accessed")
    code, out, _ = run_check(capsys, write(tmp_path, clean), "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["problems"] == []
    assert [p["model"] for p in report["priors"]] == ["a", "c", "d"]
    assert report["without_prior"] == [{"arena": "tts", "model": "b"}]


def test_the_default_registry_has_no_prior_and_passes(capsys):
    """No published figure exists for the default engines: every model is listed, none fails."""
    code, out, _ = run_check(capsys, ROOT / "registry.yaml", "--format", "json")
    report = json.loads(out)
    models = [(a.id, m.id) for a in load_registry(ROOT / "registry.yaml").arenas for m in a.models]
    assert code == 0 and report["problems"] == [] and report["priors"] == []
    assert [(f["arena"], f["model"]) for f in report["without_prior"]] == models


def test_what_is_not_about_priors_is_the_loaders_error_exit_2(tmp_path, capsys):
    broken = MIXED.replace("{id: b, name: B,", "{id: b, nmae: B,")
    code, _, err = run_check(capsys, write(tmp_path, broken))
    assert code == 2 and "model 'b', field 'nmae': unknown key" in err
    code, _, err = run_check(capsys, tmp_path / "absent.yaml")
    assert code == 2 and "cannot read" in err
    code, _, err = run_check(capsys, write(tmp_path, "arenas: [\n"))
    assert code == 2 and "not valid YAML" in err
    # Files that once escaped as a traceback (exit 1): latin-1, a complex key, deep nesting.
    for content in ("title: Caf\xe9".encode("latin-1"), b"? [1]\n: 2\n", b"[" * 5000):
        (tmp_path / "registry.yaml").write_bytes(content)
        code, _, err = run_check(capsys, tmp_path / "registry.yaml")
        assert code == 2 and "registry.yaml: not valid YAML" in err


def test_a_future_date_fails_the_check_with_todays_date(tmp_path):
    path = write(tmp_path, MIXED.replace("86.5, source: 'https://example.org/paper#table-2', "
                                         "accessed: 2026-03-01", "86.5, source: 'x', "
                                         "accessed: 2026-03-09"))  # fmt: skip
    report = check_registry(path, today=date(2026, 3, 5))
    assert (INVALID, "a", "prior.accessed") in [(f.kind, f.model, f.field) for f in report.findings]
    assert NO_PRIOR in {f.kind for f in report.findings}


def test_the_command_runs_as_researchers_run_it(tmp_path):
    path = write(tmp_path, MIXED)
    proc = subprocess.run([sys.executable, "-m", "arena_core", "registry", "--check", "--registry",
                           str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert proc.returncode == 1 and "3 problem(s)" in proc.stdout
    usage = subprocess.run([sys.executable, "-m", "arena_core", "registry"], capture_output=True,
                           text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert usage.returncode == 2 and "--check" in usage.stderr
