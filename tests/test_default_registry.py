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
    assert [a.id for a in registry.arenas] == ["tts-en", "tts-multilingual", "chat", "image"]
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
    assert len(pairable) >= 6
    assert families >= PIP_FAMILIES
    for model_id, reason in unavailable.items():
        assert "not on PATH (apt-get install" in reason, (model_id, reason)


def test_prompt_sets_are_large_enough(registry):
    assert len(registry.arena("tts-en").prompts) >= 120
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


def test_model_metadata_is_documented_and_not_invented(registry):
    voices_doc = (ROOT / "docs" / "voices.md").read_text(encoding="utf-8")
    for arena in registry.arenas:
        for model in arena.models:
            assert model.license, model.id
            assert model.url, model.id
            assert model.prior is None, model.id  # no published benchmark figure for these models
            assert (model.params is None) == (model.params_m is None), model.id
            assert f"`{model.id}`" in voices_doc, f"{model.id} missing from docs/voices.md"
    local = [m for a in registry.arenas[:2] for m in a.models]
    assert all(m.params is None for m in local)  # no speech voice documents its size


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
        "flite, festival, hf-inference, gradio-space, openai-compatible)"
    )
    assert any("model 'm2': unknown option backend.vioce" in p for p in problems)
    assert any("model 'm2': needs backend.voice or backend.voices" in p for p in problems)
    assert any("model 'm3': missing required option backend.model" in p for p in problems)
    assert any(
        "model 'm4': backend 'openai-compatible' makes text, not audio" in p for p in problems
    )
