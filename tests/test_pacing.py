"""The hold of typed-prompt battles and the start-up warm-up, with injected clocks and a fake engine."""

from types import MappingProxyType

import numpy as np
import pytest
from fakes import Clock

from arena_core.backends import Availability, Backend, ModelPool, Output
from arena_core.backends.base import VOICE_OPTIONS
from arena_core.registry import parse_registry
from arena_core.space.blinding import Blinder, BlindingParams
from arena_core.space.pacing import FALLBACK_SPEED, Pacer, Speed, fit_speed, release_at
from arena_core.space.warmup import Warmup


def test_fit_speed_on_hand_worked_lines():
    assert fit_speed([(10, 1.0), (30, 2.0)]) == Speed(0.5, 0.05)  # slope 1/20, through (10, 1)
    assert fit_speed([(20, 1.0)]) == Speed(0.0, 0.05)
    assert fit_speed([(10, 2.0), (30, 1.0)]) == Speed(1.5, 0.0)  # never a negative slope
    with pytest.raises(ValueError, match="no samples"):
        fit_speed([])


def test_release_at_the_floor_or_the_next_step():
    assert release_at(0.3, 1.0, 0.25) == 1.0
    assert release_at(1.1, 1.0, 0.25) == 1.25
    assert release_at(2.0, 1.0, 0.25) == 2.0


class Sleeper:
    def __init__(self, clock):
        self.clock, self.slept = clock, []

    def __call__(self, seconds):
        self.slept.append(seconds)
        self.clock.now += seconds


def test_typed_battles_are_held_to_the_slowest_drawable_model_whichever_ran():
    clock = Clock()
    sleep = Sleeper(clock)
    pacer = Pacer(clock=clock, sleep=sleep, margin=1.5, quantum=0.25)
    pacer.record("a", "slow", 40, 1.0)
    pacer.record("a", "fast", 40, 0.01)
    floor = pacer.floor("a", ["slow", "fast"], 40)
    assert floor == 1.5  # 1.0 s (40 chars through the origin) x 1.5, on the 0.25 grid
    answered = []
    for generation in (0.02, 0.9):  # two fast engines, or the slow one in the pair
        started = clock()
        clock.now += generation
        pacer.hold(started, "a", ["slow", "fast"], 40, typed=True)
        answered.append(clock() - started)
    assert answered == [pytest.approx(1.5), pytest.approx(1.5)]
    started = clock()
    clock.now += 1.6  # an overrun shows only in quantum steps
    pacer.hold(started, "a", ["slow", "fast"], 40, typed=True)
    assert clock() - started == pytest.approx(1.75)


def test_set_prompts_are_held_until_the_arena_is_warm():
    clock = Clock()
    pacer = Pacer(clock=clock, sleep=Sleeper(clock))
    assert pacer.speed("a", "unmeasured") == FALLBACK_SPEED
    assert pacer.hold(clock(), "a", ["m"], 20, typed=False) > 0
    pacer.mark_warm("a")
    assert pacer.hold(clock(), "a", ["m"], 20, typed=False) == 0
    assert pacer.hold(clock(), "a", ["m"], 20, typed=True) > 0


class Tone(Backend):
    """A tone whose rate and level depend on the model: what blinding must hide."""

    type_name = "fake"
    modalities = frozenset({"audio"})
    options_spec = MappingProxyType(dict(VOICE_OPTIONS))

    def __init__(self, model, rate):
        super().__init__(model, "audio")
        self.rate, self.texts = rate, []

    def _check_availability(self):
        return Availability.yes()

    def _engine_version(self):
        return "1"

    def _generate(self, text, timeout, language):
        self.texts.append(text)
        t = np.arange(int(self.rate * (0.5 + len(text) / 40))) / self.rate
        return Output.from_audio(self.rate, 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(9 * t)))


REGISTRY = {"arenas": [{"id": "tts", "title": "TTS", "modality": "audio",
                        "prompts": [{"id": f"p{k}", "text": "Hello " * (k + 1)} for k in range(3)],
                        "models": [{"id": m, "name": m, "backend": {"type": "fake"}} for m in ("m8", "m16")]}]}  # fmt: skip


class HostedTone(Tone):
    """A voice whose generations are calls to a paid service."""

    remote = True


def tone_voices(arena, hosted: tuple[str, ...] = ()) -> dict:
    """The test arena's two voices, tones at 8 and 16 kHz; those in ``hosted`` are paid."""
    rates = {"m8": 8000, "m16": 16_000}
    return {m: (HostedTone if m in hosted else Tone)(arena.model(m), r) for m, r in rates.items()}


def plain_warmup(registry, pool: ModelPool, pacer: Pacer) -> Warmup:
    """The warm-up of the test arena, blinding without a cache."""
    blinder = Blinder(BlindingParams())
    return Warmup(registry, {"tts": pool}, blinder, pacer, rng=np.random.default_rng(0))


def test_warmup_generates_every_set_prompt_times_each_model_and_marks_the_arena_warm(tmp_path):
    registry = parse_registry(REGISTRY)
    arena = registry.arena("tts")
    backends = tone_voices(arena)
    pool = ModelPool(arena, backends)
    pacer = Pacer()
    progress = plain_warmup(registry, pool, pacer).run()
    pool.close()
    assert progress.done and progress.done_count == {"tts": 6} and progress.failed == {"tts": 0}
    assert pacer.is_warm("tts")
    for backend in backends.values():
        spoken = set(backend.texts)
        assert {p.text for p in arena.prompts} <= spoken
        assert len(spoken) == 5  # three set prompts and two uncacheable timing prompts
    assert pacer.speed("tts", "m8") != FALLBACK_SPEED


def test_the_warm_up_times_a_hosted_voice_but_makes_none_of_its_set_prompts(tmp_path):
    """Pre-generating a hosted voice's set prompts is about 150 paid calls per voice on
    every start with an empty cache: it is only timed. Battles that draw it stay held."""
    registry = parse_registry(REGISTRY)
    arena = registry.arena("tts")
    backends = tone_voices(arena, hosted=("m16",))
    pool = ModelPool(arena, backends)
    pacer = Pacer()
    warmup = plain_warmup(registry, pool, pacer)
    assert warmup.progress.total == {"tts": 3}
    progress = warmup.run()
    pool.close()
    assert progress.done and progress.done_count == {"tts": 3} and progress.failed == {"tts": 0}
    assert {p.text for p in arena.prompts} <= set(backends["m8"].texts)
    hosted = backends["m16"].texts
    assert len(hosted) == 2 and not {p.text for p in arena.prompts} & set(hosted)  # timed only
    assert pacer.speed("tts", "m16") != FALLBACK_SPEED


def test_after_the_warm_up_a_set_prompt_battle_reads_only_the_shaped_clips(tmp_path, monkeypatch):
    from arena_core.backends.cache import OutputCache
    from arena_core.space.service import ArenaService
    from arena_core.votes.log import VoteLog

    registry = parse_registry(REGISTRY)
    arena = registry.arena("tts")
    backends = tone_voices(arena)
    raw = OutputCache(tmp_path / "raw")
    pool = ModelPool(arena, backends, cache=raw)
    blinder = Blinder(BlindingParams(), cache=OutputCache(tmp_path / "shaped"))
    Warmup(registry, {"tts": pool}, blinder, Pacer(), rng=np.random.default_rng(0)).run()
    spoken = {m: len(b.texts) for m, b in backends.items()}
    raw_reads = []
    monkeypatch.setattr(raw, "get", lambda *args: raw_reads.append(args))
    service = ArenaService(registry, {"tts": pool}, VoteLog(tmp_path / "votes"), blinder=blinder,
                           rng=np.random.default_rng(1))  # fmt: skip
    service.load()
    for _ in range(6):
        view = service.new_battle("tts")
        a, b = view.output_a, view.output_b
        assert a.sample_rate == b.sample_rate == BlindingParams().sample_rate
        assert len(a.samples) == len(b.samples)
    assert raw_reads == []  # neither the engines' outputs read nor their samples hashed
    assert {m: len(b.texts) for m, b in backends.items()} == spoken
    typed = service.new_battle("tts", "Something nobody warmed up")  # no shaped clip: generated
    assert typed.output_a.sample_rate == BlindingParams().sample_rate and raw_reads
    service.close()


def test_a_damaged_cache_folder_or_a_full_disk_stops_neither_the_warm_up_nor_a_battle(
    tmp_path, monkeypatch
):
    """Entries cut short (odd: numpy raised out of the warm-up thread and every battle; even:
    served short), odd things in the folders, then a full disk (OSError out of both)."""
    import os
    import threading

    from fakes import full_disk

    from arena_core.backends.cache import OutputCache
    from arena_core.space.service import ArenaService
    from arena_core.votes.log import VoteLog

    registry = parse_registry(REGISTRY)
    arena = registry.arena("tts")
    backends = tone_voices(arena)

    def boot(calibrate=False):  # a restart on the same folders
        pool = ModelPool(arena, backends, cache=OutputCache(tmp_path / "raw"))
        blinder = Blinder(BlindingParams(), cache=OutputCache(tmp_path / "shaped"))
        return pool, blinder, Warmup(registry, {"tts": pool}, blinder, Pacer(),
                                     calibrate=calibrate, rng=np.random.default_rng(0))  # fmt: skip

    pool, _, warmup = boot()
    warmup.run()
    pool.close()
    whole = {p.name: p.read_bytes() for p in tmp_path.glob("*/*.wav")}
    for k, (name, data) in enumerate(sorted(whole.items())):
        next(tmp_path.glob(f"*/{name}")).write_bytes(data[: len(data) // 2 | k % 2])
    os.symlink("loop.wav", tmp_path / "shaped" / "loop.wav")
    (tmp_path / "raw" / "0000.wav").mkdir()
    died = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    for disk_full in (False, True):
        if disk_full:
            full_disk(monkeypatch)
        pool, blinder, warmup = boot(calibrate=disk_full)
        warmup.start().join()
        assert died == [] and warmup.progress.done and warmup.progress.failed == {"tts": 0}
        service = ArenaService(registry, {"tts": pool}, VoteLog(tmp_path / f"votes{disk_full}"),
                               blinder=blinder, rng=np.random.default_rng(1))  # fmt: skip
        service.load()
        for prompt in (None, "A sentence typed by a visitor"):
            view = service.new_battle("tts", prompt)
            for clip in (view.output_a, view.output_b):  # the whole tone, not half of it
                loud = np.flatnonzero(np.abs(clip.samples.astype(int)) > 200)
                spoken = (loud[-1] - loud[0]) / clip.sample_rate
                assert spoken > 0.9 * (0.5 + len(view.prompt) / 40)
        service.close()
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*/*.wav") if p.name in whole} == whole
