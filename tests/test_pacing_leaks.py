"""The answer's time tells nothing about the pair, when the machine gets busier than the
warm-up measured and when a set prompt has to be generated again (an evicted clip, a pair
the warm-up missed). A fake engine spends its time on a shared fake clock, so the service's
timings are exact and the runs seeded."""

import threading

import numpy as np
import pytest
from test_pacing import Tone

import arena_core.space.service as service_module
from arena_core.backends import BackendError, ModelPool
from arena_core.backends.cache import OutputCache
from arena_core.registry import parse_registry
from arena_core.space import pacing
from arena_core.space.blinding import Blinder, BlindingParams
from arena_core.space.pacing import QUANTUM, Pacer
from arena_core.space.service import ArenaService
from arena_core.space.warmup import Warmup
from arena_core.votes.log import VoteLog

#: Seconds per character: the slow engine (Piper-like) and the fast ones (eSpeak-like).
SLOW, FAST = 0.025, 0.0001
PROMPTS = ["The kettle is already boiling.", "Please close the garden gate.",
           "The train leaves at seven sharp."]  # fmt: skip
REGISTRY = {"arenas": [{"id": "tts", "title": "TTS", "modality": "audio",
                        "prompts": [{"id": f"p{k}", "text": t} for k, t in enumerate(PROMPTS)],
                        "models": [{"id": m, "name": m, "backend": {"type": "fake"}}
                                   for m in ("slow", "fast1", "fast2")]}]}  # fmt: skip


class Clock:
    """A fake clock the engines advance (two sides of a battle run in two threads)."""

    def __init__(self):
        self.now, self._lock = 100.0, threading.Lock()

    def __call__(self):
        return self.now

    def advance(self, seconds):
        with self._lock:
            self.now += seconds


class Timed(Tone):
    """A tone that takes ``per_char * len(text) * load`` fake seconds (times a seeded
    log-normal factor), and fails the first ``fail[text]`` times it is asked for ``text``."""

    def __init__(self, model, rate, clock, per_char, *, sigma=0.0, fail=None):
        super().__init__(model, rate)
        self.clock, self.per_char, self.load, self.sigma = clock, per_char, 1.0, sigma
        self.fail, self.rng = dict(fail or {}), np.random.default_rng(7)

    def _generate(self, text, timeout, language):
        if self.fail.get(text, 0) > 0:
            self.fail[text] -= 1
            raise BackendError(self.model_id, "no output within 30 s")
        noise = float(np.exp(self.sigma * self.rng.standard_normal())) if self.sigma else 1.0
        self.clock.advance(self.per_char * len(text) * self.load * noise)
        return super()._generate(text, timeout, language)


def build(tmp_path, clock, *, sigma=0.0, fail=None, seed=1):
    """A warmed-up (and calibrated, on the fake clock) arena of one slow and two fast engines;
    ``fail``: model id to its :class:`Timed` failures."""
    registry = parse_registry(REGISTRY)
    arena = registry.arena("tts")
    fail = fail or {}
    backends = {"slow": Timed(arena.model("slow"), 8000, clock, SLOW, sigma=sigma,
                              fail=fail.get("slow"))}  # fmt: skip
    for name in ("fast1", "fast2"):
        backends[name] = Timed(arena.model(name), 16_000, clock, FAST, fail=fail.get(name))
    pool = ModelPool(arena, backends, cache=OutputCache(tmp_path / "raw"))
    blinder = Blinder(BlindingParams(), cache=OutputCache(tmp_path / "shaped"),
                      rng=np.random.default_rng(2))  # fmt: skip
    pacer = Pacer(clock=clock)
    progress = Warmup(registry, {"tts": pool}, blinder, pacer, clock=clock,
                      rng=np.random.default_rng(0)).run()  # fmt: skip
    service = ArenaService(registry, {"tts": pool}, VoteLog(tmp_path / "votes"), blinder=blinder,
                           pacer=pacer, rng=np.random.default_rng(seed))  # fmt: skip
    service.load()
    return service, backends, progress


def battle(service, clock, prompt=None, *, pair=False):
    """(the slow engine is in the pair, or the pair itself; seconds the client waits: server
    time plus hold)."""
    started = clock()
    view = service.new_battle("tts", prompt)
    opened = service.book._open[view.handle]
    drawn = {opened.model_a, opened.model_b}
    return drawn if pair else "slow" in drawn, round(clock() - started + view.hold, 6)


def evict(service, model_id, text):
    """Drop the model's raw and shaped clips of ``text``, as the bounded caches' LRU does."""
    pool, blinder = service.pools["tts"], service.blinder
    source = pool.cache_key(model_id, text)
    for cache, key in ((pool._cache, source), (blinder._cache, blinder._source_key(source))):
        for path in cache.directory.glob(f"{key}.*"):
            path.unlink()


def assert_held_alike_until_remade(runs, missing):
    """Every battle up to the one that remakes ``missing``'s clip is answered at the same
    time, whichever pair it drew; once the prompt is whole again none is held. Returns the
    held battles' pairs."""
    remade = next(k for k, (pair, _) in enumerate(runs) if missing in pair)
    held = {t for _, t in runs[: remade + 1]}
    assert len(held) == 1 and held.pop() >= QUANTUM, runs
    assert all(t < 0.01 for _, t in runs[remade + 1 :]), runs
    return [pair for pair, _ in runs[: remade + 1]]


def test_a_set_prompt_battle_whose_clip_was_evicted_is_held_whichever_pair_is_drawn(tmp_path):
    clock = Clock()
    service, _, progress = build(tmp_path, clock)
    assert progress.failed == {"tts": 0} and service.pacer.is_warm("tts")
    assert {t for _, t in (battle(service, clock, PROMPTS[0]) for _ in range(4))} == {0.0}
    evict(service, "slow", PROMPTS[0])
    runs = [battle(service, clock, PROMPTS[0], pair=True) for _ in range(10)]
    service.close()
    held = assert_held_alike_until_remade(runs, "slow")
    assert "slow" not in held[0], "draw a fast pair first (another seed)"


@pytest.mark.parametrize("failures", [1, 2])
def test_a_pair_the_warm_up_missed_is_tried_again_and_else_holds_its_prompt(tmp_path, failures):
    """One failure (a busy start): the retry makes the clip and nothing is held. Two: the
    prompt's battles are held alike until a battle makes the clip, those of the pair whose
    two clips are there too (which of a prompt's clips is missing must not show)."""
    clock = Clock()
    service, _, progress = build(tmp_path, clock, fail={"fast1": {PROMPTS[1]: failures}})
    assert service.pacer.is_warm("tts") and progress.failed == {"tts": failures - 1}
    runs = [battle(service, clock, PROMPTS[1], pair=True) for _ in range(10)]
    service.close()
    if failures == 1:
        assert {t for _, t in runs} == {0.0}
    else:
        assert_held_alike_until_remade(runs, "fast1")


def best_threshold_accuracy(runs):
    """The best score of the rule "the slow engine ran iff the wait is longer than t", with
    ``t`` chosen after seeing the answers (an adversary's best rule on one battle's time)."""
    times = sorted({t for _, t in runs})
    cuts = [times[0] - 1, *times]
    return max(sum((t > cut) == slow for slow, t in runs) for cut in cuts) / len(runs)


def test_under_sustained_load_a_typed_battles_time_does_not_tell_the_slow_engine(tmp_path):
    """The machine becomes 2.5 times slower than at the warm-up's calibration. Before, every
    battle with the slow engine overran the calibrated floor by a step or more, so the wait
    named it every time; now the floor follows the live battles and, once three slow
    battles have raised it, the wait says no more than the majority class does."""
    clock = Clock()
    service, backends, _ = build(tmp_path, clock, sigma=0.1, seed=3)
    backends["slow"].load = 2.5
    runs = [battle(service, clock, f"Visitor sentence {k:03d}: the market opens at nine.")
            for k in range(48)]  # fmt: skip
    service.close()
    steady = runs[6:]  # the first slow battles overrun: this load was not measured yet
    assert sum(slow for slow, _ in runs[:6]) >= pacing.LIVE_RANK
    slow = sum(s for s, _ in steady)
    assert 0 < slow < len(steady)
    majority = max(slow, len(steady) - slow) / len(steady)
    assert best_threshold_accuracy(steady) <= majority + 2 / len(steady), runs


def test_the_hold_quantises_the_whole_server_time_of_a_battle(tmp_path, monkeypatch):
    """Work after the generation (the style measures, the battle record) is held too: the
    answer leaves on the floor's grid, counted from the request, whichever pair ran."""
    clock = Clock()
    service, _, _ = build(tmp_path, clock)
    measure = service_module.battle_style

    def slow_style(*args, **kwargs):  # 0.1 s of work after both sides were generated
        clock.advance(0.1)
        return measure(*args, **kwargs)

    monkeypatch.setattr(service_module, "battle_style", slow_style)
    runs = [battle(service, clock, f"Typed words number {k}.") for k in range(8)]
    service.close()
    assert {s for s, _ in runs} == {True, False}
    for _, waited in runs:
        assert waited / QUANTUM == pytest.approx(round(waited / QUANTUM)), runs
    assert len({t for _, t in runs}) == 1, runs


def test_live_battles_raise_the_floor_from_the_third_slowest_and_it_falls_back():
    pacer = Pacer(clock=Clock(), margin=1.5, quantum=0.25)
    pacer.record("a", "slow", 40, 1.0)
    pacer.record("a", "fast", 40, 0.01)
    assert pacer.floor("a", ["slow", "fast"], 40) == 1.5
    pacer.observe("a", ["slow", "fast"], 40, 20.0)  # one outlier (a first load) moves nothing
    pacer.observe("a", ["slow", "fast"], 40, 2.0)  # battles on a busy machine
    assert pacer.floor("a", ["slow", "fast"], 40) == 1.5
    pacer.observe("a", ["slow", "fast"], 40, 2.0)  # the third: the floor covers it
    assert pacer.floor("a", ["slow", "fast"], 40) == 3.0
    assert pacer.floor("a", ["slow", "fast"], 80) == 6.0  # scaled along the calibrated line
    assert pacer.floor("a", ["fast"], 40) == 3.0  # a battle's time counts for both its models
    for _ in range(pacing.LIVE_WINDOW - 3):
        pacer.observe("a", ["slow", "fast"], 40, 0.5)  # idle again: faster than calibrated
    assert pacer.floor("a", ["slow", "fast"], 40) == 3.0
    pacer.observe("a", ["slow", "fast"], 40, 0.5)  # the outlier leaves: two slow ones left
    assert pacer.floor("a", ["slow", "fast"], 40) == 1.5  # never below the calibration
