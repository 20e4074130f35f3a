"""Each side's style is recorded with the vote, measured on the clips as delivered."""

import math

import numpy as np
import pytest
from test_pacing import REGISTRY, Tone

from arena_core.backends import ModelPool, Output
from arena_core.backends.cache import OutputCache
from arena_core.registry import parse_registry
from arena_core.space.blinding import Blinder, BlindingParams
from arena_core.space.pacing import Pacer
from arena_core.space.service import ArenaService
from arena_core.space.style import battle_style
from arena_core.space.warmup import Warmup
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes
from arena_core.votes.schema import STYLE_COLUMNS

TOKEN = "judge-token"


def build(tmp_path, *, warm=True):
    data = dict(REGISTRY, judges=[{"id": "j", "name": "J", "kind": "prosody", "arenas": ["tts"]}])
    registry = parse_registry(data)
    arena = registry.arena("tts")
    backends = {"m8": Tone(arena.model("m8"), 8000), "m16": Tone(arena.model("m16"), 16_000)}
    pool = ModelPool(arena, backends, cache=OutputCache(tmp_path / "raw"))
    blinder = Blinder(BlindingParams(), cache=OutputCache(tmp_path / "shaped"),
                      rng=np.random.default_rng(2))  # fmt: skip
    if warm:
        Warmup(registry, {"tts": pool}, blinder, Pacer(), rng=np.random.default_rng(0)).run()
    service = ArenaService(registry, {"tts": pool}, VoteLog(tmp_path / "votes"), blinder=blinder,
                           rng=np.random.default_rng(1), judge_token=TOKEN)  # fmt: skip
    service.load()
    return service, pool


def test_votes_carry_each_sides_style_as_delivered(tmp_path):
    service, _ = build(tmp_path)
    for _ in range(4):
        view = service.new_battle("tts")
        service.vote(view.handle, "a", voter="v")
    view = service.new_battle("tts")
    service.judge_vote(view.handle, ("a", "b"), "j", TOKEN)
    service.close()
    rows = read_votes(tmp_path / "votes").table.to_pylist()
    rates = {"m8": 8000, "m16": 16_000}
    for row in rows:
        # The engine's own rate, though both clips reached the browser at 24 kHz.
        assert row["model_a_sample_rate"] == rates[row["model_a"]]
        assert row["model_b_sample_rate"] == rates[row["model_b"]]
        words = len(row["prompt"].split())
        for side in "ab":
            # Tone speaks 0.5 s + 1/40 s per character, without pauses: span = active time.
            seconds = 0.5 + len(row["prompt"]) / 40
            assert row[f"model_{side}_duration_s"] == pytest.approx(seconds, abs=0.06)
            assert row[f"model_{side}_speech_rate"] == pytest.approx(words / seconds, rel=0.1)
            # Normalised to -23 LUFS (the raw tones measure about -13): a short clip's gated
            # loudness also moves with its padding and the delivery's 0.3 LU jitter.
            assert row[f"model_{side}_lufs"] == pytest.approx(-23, abs=1.2)
    first, second = rows[-2:]  # the judge's swapped verdict swaps the style with the models
    for name in ("duration_s", "speech_rate", "lufs", "sample_rate"):
        assert (second[f"model_a_{name}"], second[f"model_b_{name}"]) == (
            first[f"model_b_{name}"], first[f"model_a_{name}"])  # fmt: skip


def test_after_a_restart_each_models_rate_is_read_from_its_cached_output_once(
    tmp_path, monkeypatch
):
    build(tmp_path)[0].close()
    service, pool = build(tmp_path, warm=False)  # a new process: shaped clips on disk, no memo
    reads = []
    real_get = pool._cache.get
    monkeypatch.setattr(pool._cache, "get", lambda *a: reads.append(a) or real_get(*a))
    for _ in range(6):
        view = service.new_battle("tts")
        service.vote(view.handle, "b", voter="v")
    assert len(reads) == 2  # one per model, then remembered
    rows = read_votes(tmp_path / "votes").table.to_pylist()
    assert all(r["model_a_sample_rate"] in (8000, 16_000) for r in rows)
    service.close()


def test_text_battles_and_silence_record_no_style():
    text = [Output.from_text("Hi"), Output.from_text("Hello")]
    assert battle_style(text, "Hi", [None, None]) == {}
    tone = Output.from_audio(16_000, 0.3 * np.sin(np.arange(16_000) / 5))
    silent = Output(modality="audio", sample_rate=16_000, samples=np.zeros(1600, dtype=np.int16))
    style = battle_style([tone, silent], "Hello there", [16_000, None])
    assert set(style) == set(STYLE_COLUMNS)
    assert style["model_b_lufs"] is None and style["model_b_speech_rate"] is None
    assert style["model_b_sample_rate"] is None and math.isfinite(style["model_a_lufs"])
