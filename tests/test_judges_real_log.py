"""The bias report on the first real judges' log, and the report when the joint fit fails.

``data/judges/tts-en-judges.jsonl`` holds the verdicts of the two real speech judges
(``judge/pocketsphinx-wer`` and ``judge/pitch-range``) on English TTS battles, each
battle judged in both orders, and no human vote. The joint fit used to fail on it
(Fisher scoring zigzagged, see :mod:`arena_core.judges.consensus`): the report must
complete. Expected counts and shares are taken from the JSONL with ``json`` here, not
from the code under test.
"""

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from arena_core import cli
from arena_core.analysis.boards import ANALYSIS_COLUMNS, counted_frame
from arena_core.analysis.text import judges_table
from arena_core.judges.bias import BiasParams, measure_judges
from arena_core.judges.consensus import ConsensusParams
from arena_core.page.analysis_html import judges_html
from arena_core.registry import load_registry
from arena_core.votes.read import read_votes

ROOT = Path(__file__).resolve().parent.parent
LOG = Path(__file__).parent / "data" / "judges" / "tts-en-judges.jsonl"
JUDGES = ("judge/pitch-range", "judge/pocketsphinx-wer")


def _raw():
    return [json.loads(line) for line in LOG.read_text().splitlines()]


def _expected(judge):
    """Verdicts, decisive share for side A, and the share of battles whose two verdicts
    pick the same side (both 'a' or both 'b'), counted from the raw rows."""
    mine = [r for r in _raw() if r["judge"] == judge]
    votes = Counter(r["vote"] for r in mine)
    battles = defaultdict(list)
    for r in mine:
        battles[r["battle_id"]].append(r["vote"])
    pairs = [v for v in battles.values() if len(v) == 2]
    same = sum(v in (["a", "a"], ["b", "b"]) for v in pairs)
    return len(mine), votes["a"] / (votes["a"] + votes["b"]), same / len(pairs), len(pairs)


def _report(params=None):
    registry = load_registry(ROOT / "registry.yaml")
    arena = registry.arena("tts-en")
    frame = counted_frame(read_votes([LOG], columns=ANALYSIS_COLUMNS), arena.id)
    families = {m.id: m.family for m in arena.models if m.family}
    return measure_judges(frame, families, {j.id: j.family for j in registry.judges}, params)


def test_the_cli_reports_on_the_real_judges_log(capsys):
    args = ["judges", "--votes", str(LOG), "--registry", str(ROOT / "registry.yaml"),
            "--arena", "tts-en"]  # fmt: skip
    assert cli.main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fit_error"] is None
    models = {r["model_a"] for r in _raw()} | {r["model_b"] for r in _raw()}
    assert set(report["consensus"]) == models and report["human"] == {}
    assert 1.0 <= report["spread"] <= 800.0
    by_id = {j["judge"]: j for j in report["judges"]}
    assert set(by_id) == set(JUDGES)
    for judge in JUDGES:
        got = by_id[judge]
        verdicts, a_share, flip_share, paired = _expected(judge)
        assert (got["verdicts"], got["battles_paired"]) == (verdicts, paired)
        assert got["a_share"] == pytest.approx(a_share) and 0 <= got["flip_share"] <= 1
        assert got["flip_share"] == pytest.approx(flip_share)
        assert math.isfinite(got["discrimination"]) and got["discrimination"] > 0
        assert set(got["corrected"]) == models
        assert all(math.isfinite(v) for v in got["corrected"].values())
        assert got["spearman_human"] is None  # no human vote to compare with
        assert math.isfinite(got["position"]["points"])
    # The counts the README quotes for this log ("On the real judges"), counted by the report.
    pitch, recogniser = by_id["judge/pitch-range"], by_id["judge/pocketsphinx-wer"]
    assert (pitch["battles_paired"], pitch["longer_verdicts"]) == (230, 172)
    assert (recogniser["battles_paired"], recogniser["longer_verdicts"]) == (41, 58)
    assert round(pitch["longer_share"], 2) == 0.44 and round(recogniser["longer_share"], 2) == 0.66
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert all(j in text for j in JUDGES) and "Consensus of the judges" in text


def test_a_failed_joint_fit_leaves_every_other_measure_and_says_why():
    full = _report()
    failed = _report(BiasParams(consensus=ConsensusParams(max_iter=1)))
    assert full.fit_error is None and "ConvergenceError" in failed.fit_error
    assert failed.consensus == {} and failed.spread is None and not failed.duration_terms
    for good, bad in zip(full.judges, failed.judges, strict=True):
        assert (bad.verdicts, bad.flip_share, bad.a_share, bad.longer_share, bad.board) == (
            good.verdicts, good.flip_share, good.a_share, good.longer_share, good.board)  # fmt: skip
        assert bad.discrimination is None and bad.corrected == {} and bad.corrected_sd == {}
        assert bad.position is None and bad.duration is None
    json.dumps(failed.to_json(), allow_nan=False)
    text = judges_table(failed, "tts-en", {})
    assert "joint fit failed (ConvergenceError" in text and "Consensus of the judges" not in text
    html = judges_html(failed, {}, {})
    assert "joint fit failed (ConvergenceError" in html and "consensus beside" not in html
