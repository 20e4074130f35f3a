"""ModelPool (outage pausing, redraw-relevant results, timeouts, cache, latency) and OutputCache.

Backends here are fakes that fail, block or succeed on purpose, and time is an
injected clock, so nothing depends on how fast this machine is: timeouts are
provoked by backends that block on an event, concurrency by a barrier.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable
from types import MappingProxyType

import numpy as np
import pytest
from fakes import full_disk
from hypothesis import given
from hypothesis import strategies as st

from arena_core.backends import (
    Availability,
    Backend,
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ModelPool,
    Output,
    OutputCache,
    PoolSettings,
)
from arena_core.backends.base import VOICE_OPTIONS
from arena_core.registry import Arena, BackendSpec, Model, Prompt

PAUSE = 300.0
SETTINGS = PoolSettings(timeout=5.0, failures_before_pause=3, pause_seconds=PAUSE)


#: Seconds to wait for what takes milliseconds: generous, as a busy CI machine can stall a
#: thread for seconds, and a wait that is met returns at once.
PATIENCE = 60


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeBackend(Backend):
    """Answers with ``behave(text, language)``: return an Output, or raise to fail."""

    type_name = "fake"
    modalities = frozenset({"audio", "text", "image"})
    options_spec = MappingProxyType(dict(VOICE_OPTIONS))

    def __init__(self, model_id: str, behave: Callable, *, ok: bool = True, version: str = "1",
                 modality: str = "text", **options):  # fmt: skip
        spec = BackendSpec("fake", MappingProxyType(options))
        super().__init__(Model(id=model_id, name=model_id, backend=spec), modality)
        self.behave, self.ok, self.engine_version = behave, ok, version
        self.calls: list[tuple[str, str | None]] = []

    def _check_availability(self) -> Availability:
        return Availability.yes() if self.ok else Availability.no("fake engine not installed")

    def _engine_version(self) -> str:
        return self.engine_version

    def _generate(self, text, timeout, language):
        self.calls.append((text, language))
        return self.behave(text, language)


def answer(text, language):
    return Output.from_text(f"said: {text} ({language})")


def broken(text, language):
    raise BackendError("flaky", "HTTP 503 from the service")


def arena_of(*ids: str, modality: str = "text") -> Arena:
    models = tuple(Model(id=i, name=i, backend=BackendSpec("fake")) for i in ids)
    return Arena(
        id="test", title="Test", modality=modality, models=models, prompts=(Prompt("p", "Hello"),)
    )


def pool_of(*backends: FakeBackend, cache=None, settings=SETTINGS, clock=None) -> ModelPool:
    arena = arena_of(*(b.model_id for b in backends), modality=backends[0].modality)
    return ModelPool(
        arena,
        {b.model_id: b for b in backends},
        cache=cache,
        clock=clock or Clock(),
        settings=settings,
    )


# -- outage pausing --------------------------------------------------------------------------


def test_consecutive_failures_pause_a_model_then_it_is_retried():
    clock = Clock()
    flaky, steady = FakeBackend("flaky", broken), FakeBackend("steady", answer)
    with pool_of(flaky, steady, clock=clock) as pool:
        for _ in range(SETTINGS.failures_before_pause):
            assert pool.pairable() == ["flaky", "steady"]
            with pytest.raises(BackendError, match="flaky: HTTP 503"):
                pool.generate("flaky", "Hello")
        status = pool.status()["flaky"]
        assert status.state == "paused"
        assert status.paused_until == clock.now + PAUSE
        assert status.retry_in == PAUSE
        assert pool.pairable() == ["steady"]
        with pytest.raises(BackendUnavailable, match="paused"):
            pool.generate("flaky", "Hello")
        assert len(flaky.calls) == SETTINGS.failures_before_pause  # a paused model is not called

        clock.advance(PAUSE + 1)
        assert pool.pairable() == ["flaky", "steady"]
        with pytest.raises(BackendError):
            pool.generate("flaky", "Hello")  # still failing: paused again at once
        assert pool.status()["flaky"].state == "paused"

        clock.advance(PAUSE + 1)
        flaky.behave = answer
        assert pool.generate("flaky", "Hello").text.startswith("said")
        assert pool.status()["flaky"].consecutive_failures == 0
        assert pool.status()["flaky"].state == "available"


def test_a_success_between_failures_resets_the_count():
    outcomes = iter([broken, broken, answer, broken, broken])
    backend = FakeBackend("m", lambda t, lang: next(outcomes)(t, lang))
    with pool_of(backend, FakeBackend("other", answer)) as pool:
        for _ in range(5):
            with contextlib.suppress(BackendError):
                pool.generate("m", "Hello")
        assert pool.status()["m"].consecutive_failures == 2
        assert pool.status()["m"].state == "available"


def chokes_on_odd_prompts(text, language):
    """A real engine's weakness: it speaks words, but not a lone joiner or punctuation."""
    if not any(ch.isalnum() for ch in text):
        raise BackendError("picky", "engine returned no audio")
    return answer(text, language)


def test_failures_on_typed_prompts_never_pause_a_model():
    # Twelve requests of "\u200d" paused five voices for 300 s. A failure on a typed prompt
    # is not counted; the model is probed on the arena's own prompt instead, which it speaks.
    picky = FakeBackend("picky", chokes_on_odd_prompts)
    with pool_of(picky, FakeBackend("other", answer)) as pool:
        for _ in range(12):
            with pytest.raises(BackendError):
                pool.generate("picky", "\u200d", trusted=False)
        pool._prober.submit(lambda: None).result(timeout=PATIENCE)  # the probe has finished
        status = pool.status()["picky"]
        assert status.state == "available" and status.consecutive_failures == 0
        assert ("Hello", None) in picky.calls  # the probe asked for the arena's own prompt
        assert sum(1 for text, _ in picky.calls if text == "Hello") == 1  # one probe, not twelve


def test_a_probe_that_fails_counts_like_a_failure_on_a_known_prompt():
    clock = Clock()
    dead = FakeBackend("dead", broken)
    settings = PoolSettings(timeout=5.0, failures_before_pause=2, pause_seconds=PAUSE,
                            probe_interval=30.0)  # fmt: skip
    with pool_of(dead, FakeBackend("other", answer), clock=clock, settings=settings) as pool:
        for _ in range(2):
            with pytest.raises(BackendError):
                pool.generate("dead", "a typed prompt", trusted=False)
            pool._prober.submit(lambda: None).result(timeout=PATIENCE)
            clock.advance(31)  # probes are at most one per probe_interval
        assert pool.status()["dead"].state == "paused"  # two failed probes, two failures
        assert [text for text, _ in dead.calls].count("Hello") == 2


def test_probes_are_rate_limited():
    clock = Clock()
    dead = FakeBackend("dead", broken)
    with pool_of(dead, FakeBackend("other", answer), clock=clock) as pool:
        for _ in range(5):
            with pytest.raises(BackendError):
                pool.generate("dead", "typed", trusted=False)
            pool._prober.submit(lambda: None).result(timeout=PATIENCE)
        assert [text for text, _ in dead.calls].count("Hello") == 1
        assert pool.status()["dead"].consecutive_failures == 1


def test_generate_pair_returns_the_failed_side_as_an_error_so_the_app_can_redraw():
    flaky, good, spare = (
        FakeBackend("flaky", broken),
        FakeBackend("good", answer),
        FakeBackend("spare", answer),
    )
    with pool_of(flaky, good, spare) as pool:
        for _ in range(SETTINGS.failures_before_pause):
            left, right = pool.generate_pair("good", "flaky", "Hello")
            assert isinstance(left, Output)
            assert isinstance(right, BackendError)
            assert right.model_id == "flaky"
        # The redraw: the failed model is no longer pairable, the replacement is.
        candidates = [m for m in pool.pairable() if m != "good"]
        assert candidates == ["spare"]
        left, right = pool.generate_pair("good", candidates[0], "Hello")
        assert isinstance(left, Output)
        assert isinstance(right, Output)


def test_unavailable_models_are_never_paired_and_say_why():
    missing = FakeBackend("missing", answer, ok=False)
    with pool_of(missing, FakeBackend("here", answer)) as pool:
        status = pool.status()["missing"]
        assert (status.state, status.reason) == ("unavailable", "fake engine not installed")
        assert pool.pairable() == ["here"]
        with pytest.raises(BackendUnavailable, match="missing: fake engine not installed"):
            pool.generate("missing", "Hello")
        assert missing.calls == []


def test_failure_counts_are_consistent_under_concurrent_calls():
    settings = PoolSettings(timeout=5.0, failures_before_pause=1000, pause_seconds=PAUSE)
    with pool_of(FakeBackend("m", broken), FakeBackend("n", answer), settings=settings) as pool:
        threads = [
            threading.Thread(target=_ignore_errors(pool.generate, "m", "x")) for _ in range(20)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert pool.status()["m"].consecutive_failures == 20


def _ignore_errors(function, *args):
    def run():
        with contextlib.suppress(BackendError):
            function(*args)

    return run


# -- timeouts and concurrency ----------------------------------------------------------------


def test_a_hanging_backend_times_out_and_counts_as_a_failure():
    release = threading.Event()
    hanging = FakeBackend("hanging", lambda t, lang: release.wait() and answer(t, lang))
    settings = PoolSettings(timeout=0.2, failures_before_pause=1, pause_seconds=PAUSE)
    try:
        with pool_of(hanging, FakeBackend("fine", answer), settings=settings) as pool:
            left, right = pool.generate_pair("fine", "hanging", "Hello")
            assert isinstance(left, Output)
            assert isinstance(right, BackendTimeout)
            assert str(right) == "hanging: no output within 0.2 s"
            assert pool.status()["hanging"].state == "paused"
    finally:
        release.set()  # let the abandoned worker thread finish


def test_both_sides_of_a_pair_run_at_the_same_time():
    """Each side waits for the other at a barrier: run one after the other, they would time out."""
    barrier = threading.Barrier(2, timeout=PATIENCE)

    def meet(text, language):
        barrier.wait()
        return answer(text, language)

    with pool_of(FakeBackend("a", meet), FakeBackend("b", meet)) as pool:
        left, right = pool.generate_pair("a", "b", "Hello")
        assert isinstance(left, Output)
        assert isinstance(right, Output)


def test_a_backend_that_breaks_its_contract_still_yields_a_backend_error():
    class Rogue(FakeBackend):
        def generate(self, text, timeout, language=None):
            raise RuntimeError("segfault-ish")

    with pool_of(Rogue("rogue", answer), FakeBackend("ok", answer)) as pool:
        left, _ = pool.generate_pair("rogue", "ok", "Hello")
        assert str(left) == "rogue: RuntimeError: segfault-ish"


def test_a_pair_needs_two_models():
    with (
        pool_of(FakeBackend("a", answer), FakeBackend("b", answer)) as pool,
        pytest.raises(ValueError, match="two different models"),
    ):
        pool.generate_pair("a", "a", "Hello")


def test_every_arena_model_needs_a_backend():
    with pytest.raises(ValueError, match="no backend for"):
        ModelPool(arena_of("a", "b"), {"a": FakeBackend("a", answer)})


# -- latency ---------------------------------------------------------------------------------


def test_median_latency_uses_successful_uncached_generations_on_the_injected_clock(tmp_path):
    clock = Clock()
    durations = iter([1.0, 2.0, 10.0])

    def timed(text, language):
        clock.advance(next(durations))
        return answer(text, language)

    backend = FakeBackend("m", timed)
    with pool_of(
        backend, FakeBackend("n", broken), clock=clock, cache=OutputCache(tmp_path)
    ) as pool:
        assert pool.median_latency("m") is None
        for text in ("one", "two", "three"):
            pool.generate("m", text)
        pool.generate("m", "one")  # a cache hit: no latency recorded
        with pytest.raises(BackendError):
            pool.generate("n", "one")
        assert pool.median_latency("m") == 2.0
        assert pool.median_latency("n") is None


# -- languages -------------------------------------------------------------------------------


def test_only_models_speaking_the_prompt_language_are_paired_and_they_get_it():
    both = FakeBackend("both", answer, voices={"en": "v-en", "de": "v-de"})
    english = FakeBackend("english", answer, voices={"en": "v-en"})
    anything = FakeBackend("anything", answer)  # declares no language: serves every prompt
    with pool_of(both, english, anything) as pool:
        assert pool.pairable("de") == ["both", "anything"]
        assert pool.pairable("EN") == ["both", "english", "anything"]
        # A topic, not a language: restricts nothing.
        assert pool.pairable("numbers") == ["both", "english", "anything"]
        pool.generate("both", "Guten Tag", "de")
        assert both.calls[-1] == ("Guten Tag", "de")
        pool.generate("both", "Seven", "numbers")
        assert both.calls[-1] == ("Seven", None)
        with pytest.raises(BackendUnavailable, match="does not speak 'de'"):
            pool.generate("english", "Guten Tag", "de")


# -- cache through the pool ------------------------------------------------------------------


def test_cache_hits_skip_the_backend_and_new_versions_miss(tmp_path):
    cache = OutputCache(tmp_path)
    backend = FakeBackend("secret-model-name", answer, voices={"en": "a", "de": "b"})
    with pool_of(backend, FakeBackend("n", answer), cache=cache) as pool:
        first = pool.generate("secret-model-name", "Hello")
        second = pool.generate("secret-model-name", "Hello")
        assert second.text == first.text
        assert len(backend.calls) == 1
        pool.generate("secret-model-name", "Hello", "de")  # a language is part of the key...
        assert len(backend.calls) == 2
    upgraded = FakeBackend("secret-model-name", answer, version="2", voices={"en": "a", "de": "b"})
    with pool_of(upgraded, FakeBackend("n", answer), cache=cache) as pool:
        pool.generate("secret-model-name", "Hello")  # ...and so is the engine version
        assert len(upgraded.calls) == 1
    names = [p.name for p in tmp_path.iterdir()]
    assert not any("secret" in name or "model" in name for name in names if name != ".secret")


# -- OutputCache -----------------------------------------------------------------------------


def audio_output(seconds: float, rate: int = 8000) -> Output:
    return Output.from_audio(rate, np.full(int(rate * seconds), 1000, dtype=np.int16))


def test_cache_stores_outputs_losslessly(tmp_path):
    cache = OutputCache(tmp_path)
    samples = (np.sin(np.arange(5000) / 7) * 30000).astype(np.int16)
    cases = {
        "audio": Output.from_audio(22050, samples),
        "text": Output.from_text("Ünïcödé text\nwith two lines"),
        "image": Output.from_image(b"\x89PNG\r\n\x1a\n" + bytes(range(256))),
    }
    for modality, output in cases.items():
        key = cache.key("m", modality, "v1")
        cache.put(key, output)
        again = cache.get(key, modality)
        assert again.to_bytes() == output.to_bytes()
    np.testing.assert_array_equal(
        cache.get(cache.key("m", "audio", "v1"), "audio").samples, samples
    )
    assert cache.get(cache.key("m", "other", "v1"), "text") is None


def test_cache_keys_are_secret_hmacs_stable_within_a_directory(tmp_path):
    first, again = OutputCache(tmp_path / "a"), OutputCache(tmp_path / "a")
    other = OutputCache(tmp_path / "b")
    key = first.key("espeak-ng/en-us", "Hello", "v1")
    assert key == again.key("espeak-ng/en-us", "Hello", "v1")
    assert key != other.key("espeak-ng/en-us", "Hello", "v1")  # unguessable without the secret
    assert len(key) == 64
    assert set(key) <= set("0123456789abcdef")
    assert key != first.key("espeak-ng/en-us", "Hello", "v1", "en")


def test_cache_evicts_least_recently_used_entries_beyond_its_budget(tmp_path):
    one_entry = len(audio_output(1.0).to_bytes())
    cache = OutputCache(tmp_path, max_bytes=int(one_entry * 3.5))
    keys = [cache.key("m", f"prompt {n}", "v") for n in range(4)]
    for age, key in enumerate(keys[:3]):
        path = cache.put(key, audio_output(1.0))
        os.utime(path, (1_000_000 + age, 1_000_000 + age))  # entry 0 oldest
    cache.get(keys[0], "audio")  # reading refreshes entry 0: entry 1 is now the oldest
    cache.put(keys[3], audio_output(1.0))
    present = [cache.get(k, "audio") is not None for k in keys]
    assert present == [True, False, True, True]
    assert cache.total_bytes <= cache.max_bytes


@pytest.mark.parametrize("memory", [0, 10**7])
def test_asking_whether_an_entry_is_cached_reads_nothing_and_counts_as_an_access(tmp_path, memory):
    """A battle's hold asks it of every model it could have drawn: like a read for the
    eviction order (so a prompt's clips age together), without reading a clip."""
    one_entry = len(audio_output(1.0).to_bytes())
    cache = OutputCache(tmp_path, max_bytes=int(one_entry * 3.5), memory_bytes=memory)
    keys = [cache.key("m", f"prompt {n}", "v") for n in range(4)]
    for age, key in enumerate(keys[:3]):
        path = cache.put(key, audio_output(1.0))
        os.utime(path, (1_000_000 + age, 1_000_000 + age))  # entry 0 oldest
    reads = []
    real = Output.from_bytes
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Output, "from_bytes", lambda *a: reads.append(a) or real(*a))
        assert cache.has(keys[0], "audio") and not cache.has(keys[3], "audio")
        assert not cache.has(keys[0], "text")
    assert reads == []
    cache.put(keys[3], audio_output(1.0))  # entry 1 is now the oldest on disk: it goes
    has = [cache.has(k, "audio") for k in keys]
    assert has == [cache.get(k, "audio") is not None for k in keys]  # the same answer
    if not memory:  # (kept in memory, entry 1 is still served from there)
        assert has == [True, False, True, True]


def test_cache_survives_concurrent_writers_and_readers(tmp_path):
    cache = OutputCache(tmp_path, max_bytes=len(audio_output(0.5).to_bytes()) * 6)
    errors = []

    def work(worker: int) -> None:
        try:
            for n in range(15):
                key = cache.key("m", f"text {n % 5}", "v")
                cache.put(key, audio_output(0.5))
                got = cache.get(key, "audio")
                assert got is None or got.duration == 0.5
        # Collected and asserted below: an exception in a thread cannot fail the test itself.
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]
    assert sum(p.stat().st_size for p in tmp_path.glob("*.wav")) <= cache.max_bytes


def test_a_corrupted_entry_is_a_miss_and_is_removed(tmp_path):
    cache = OutputCache(tmp_path)
    key = cache.key("m", "Hello", "v")
    path = cache.put(key, audio_output(0.5))
    path.write_bytes(b"RIFF garbage")
    assert cache.get(key, "audio") is None
    assert not path.exists()


#: A short clip whose every truncation the property below may try (844 bytes as a WAV).
CLIP = Output.from_audio(8000, (np.sin(np.arange(400) / 3) * 20000).astype(np.int16))


@given(cut=st.integers(0, len(CLIP.to_bytes()) - 1))
def test_a_cached_wav_cut_short_anywhere_is_dropped_and_counted_never_served(cut):
    """Odd cuts used to raise numpy's ValueError out of every read; even cuts were served as
    speech that stops mid-sentence. Either way it is now a counted miss, and the file goes."""
    with tempfile.TemporaryDirectory() as folder:
        cache = OutputCache(folder)
        key = cache.key("m", "Hello", "v")
        path = cache.put(key, CLIP)
        path.write_bytes(path.read_bytes()[:cut])
        restarted = OutputCache(folder)  # nothing in memory: the file is all there is
        assert restarted.get(key, "audio") is None
        assert restarted.dropped == 1 and not path.exists()


def test_the_pool_regenerates_an_entry_cut_short_or_a_hit_too_long_for_its_prompt(tmp_path):
    backend = FakeBackend("m", _audio(8000, SPEECH[:8000]), modality="audio")
    other = FakeBackend("n", _audio(8000, SPEECH[:8000]), modality="audio")
    with pool_of(backend, other, cache=OutputCache(tmp_path)) as pool:
        whole = pool.generate("m", "Hello").duration
        path = tmp_path / f"{pool.cache_key('m', 'Hello')}.wav"
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) * 2 // 5 & ~1])  # even: plays
    with pool_of(backend, other, cache=OutputCache(tmp_path)) as pool:  # a restart
        assert pool.generate("m", "Hello").duration == whole
        assert len(backend.calls) == 2  # regenerated, not served short
        assert Output.from_bytes("audio", path.read_bytes()).duration == whole  # and replaced
        cache = OutputCache(tmp_path)
        cache.put(pool.cache_key("m", "Hello"), Output.from_audio(8000, SPEECH[:8000].repeat(30)))
        assert pool.generate("m", "Hello").duration == whole  # 30 s for "Hello": not served
        assert len(backend.calls) == 3


def test_folders_and_links_named_like_entries_stop_neither_the_cache_nor_eviction(tmp_path):
    os.symlink("loop.wav", tmp_path / "loop.wav")  # a link to itself: stat() raises ELOOP
    os.symlink("/nonexistent", tmp_path / "dangling.wav")
    (tmp_path / "0000.wav").mkdir()
    os.utime(tmp_path / "0000.wav", (1, 1))  # older than every entry: evicted first, if at all
    one_entry = len(audio_output(0.5).to_bytes())
    cache = OutputCache(tmp_path, max_bytes=one_entry * 4)
    for n in range(12):
        assert cache.put(cache.key("m", f"text {n}", "v"), audio_output(0.5)) is not None
    on_disk = sum(p.stat().st_size for p in tmp_path.glob("*.wav") if p.is_file() and
                  not p.is_symlink())  # fmt: skip
    assert on_disk <= cache.max_bytes and cache.total_bytes == on_disk
    assert (tmp_path / "0000.wav").is_dir() and (tmp_path / "loop.wav").is_symlink()
    key = cache.key("m", "Hello", "v")
    (tmp_path / f"{key}.wav").mkdir()  # a folder where an entry would go
    assert cache.get(key, "audio") is None
    assert cache.put(key, audio_output(0.5)) is None and cache.write_failures == 1


def test_a_damaged_secret_is_replaced_and_the_cache_opens(tmp_path):
    (tmp_path / ".secret").write_bytes(b"")  # cut short
    cache = OutputCache(tmp_path)
    assert len((tmp_path / ".secret").read_bytes()) == 32
    assert cache.key("m", "Hello", "v") == OutputCache(tmp_path).key("m", "Hello", "v")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / ".secret").mkdir()  # cannot be replaced: kept in memory instead
    assert OutputCache(tmp_path / "folder").put("k", audio_output(0.5)) is not None


def test_a_failed_write_is_counted_logged_once_and_the_output_still_served(
    tmp_path, monkeypatch, caplog
):
    cache = OutputCache(tmp_path, memory_bytes=10**6)
    full_disk(monkeypatch)
    clips = [audio_output(0.5) for _ in range(3)]
    keys = [cache.key("m", f"text {n}", "v") for n in range(3)]
    with caplog.at_level("INFO", logger="arena_core.backends.cache"):
        assert [cache.put(k, c) for k, c in zip(keys, clips, strict=True)] == [None] * 3
    assert cache.write_failures == 3
    assert len([r for r in caplog.records if r.levelname == "WARNING"]) == 1  # once per outage
    assert [cache.get(k, "audio") for k in keys] == clips  # served from memory meanwhile
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    assert cache.total_bytes == 0
    monkeypatch.undo()
    with caplog.at_level("INFO", logger="arena_core.backends.cache"):
        assert cache.put(keys[0], clips[0]) is not None  # the disk has room again
    assert "work again" in caplog.text and cache.total_bytes > 0


# -- garbage from a backend ------------------------------------------------------------------


def _audio(rate, samples):
    return lambda text, language: Output.from_audio(rate, samples)


SPEECH = 0.3 * np.sin(np.linspace(0, 2000, 22050))


@pytest.mark.parametrize(
    ("behave", "why"),
    [
        (_audio(22050, np.array([], dtype=np.float32)), "no samples"),
        (_audio(22050, np.full(22050, np.nan)), "NaN"),
        (_audio(22050, np.where(np.arange(22050) == 7, np.inf, SPEECH)), "infinite"),
        (_audio(0, SPEECH), "outside"),
        (_audio(10**9, SPEECH), "outside"),
        (_audio(8000, np.zeros(8000 * 700, dtype=np.int16)), "too long"),  # 11 minutes
        (_audio(22050, np.zeros(22050, dtype=np.int16)), "silent"),
        (_audio(8000, 0.3 * np.sin(np.arange(8000 * 200))), "200 s of audio"),  # for "Hello"
        (lambda text, language: b"\x00" * 100, "Output"),  # not an Output at all
    ],
    ids=["empty", "nan", "inf", "rate-0", "rate-1GHz", "hours", "silent", "implausible", "bytes"],
)
def test_garbage_from_a_backend_is_a_failure_never_an_output(behave, why):
    bad = FakeBackend("bad", behave, modality="audio")
    good = FakeBackend("good", _audio(22050, SPEECH), modality="audio")
    with pool_of(bad, good) as pool:
        with pytest.raises(BackendError, match=why):
            pool.generate("bad", "Hello")
        assert pool.status()["bad"].consecutive_failures == 1
        left, right = pool.generate_pair("good", "bad", "Hello")
        assert isinstance(left, Output) and isinstance(right, BackendError)


def test_model_versions_name_the_engine_and_hosted_models_report_none():
    local = FakeBackend("local", answer, version="2.5")
    with pool_of(local, FakeBackend("other", answer)) as pool:
        assert pool.model_version("local") == "fake 2.5"
    local.remote = True  # a hosted model reports no version of its weights
    assert local.model_version is None


def test_the_memory_layer_serves_hits_without_reading_files_and_keeps_its_budget(tmp_path):
    cache = OutputCache(tmp_path, memory_bytes=2_500)
    clips = [Output.from_audio(8000, (np.arange(500) % 50 - 25).astype(np.int16) * 100)
             for _ in range(3)]  # 1,000 bytes of samples each  # fmt: skip
    keys = [cache.key("m", f"text {k}", "1") for k in range(3)]
    for key, clip in zip(keys, clips, strict=True):
        cache.put(key, clip)
    for path in tmp_path.glob("*.wav"):
        path.unlink()  # from here on only memory can answer
    assert cache.get(keys[0], "audio") is None  # the oldest left memory (budget 2,500 bytes)
    assert cache.get(keys[1], "audio") is clips[1] and cache.get(keys[2], "audio") is clips[2]
    assert cache.get(keys[2], "text") is None  # a modality mismatch is a miss


def test_generation_runs_at_a_lower_priority_than_serving():
    """Synthesis yields the CPU to votes and cached battles: its thread, and a program it
    starts, run at GENERATION_NICE (Linux keeps a niceness per thread) while the caller's
    thread keeps its own."""
    import subprocess

    from arena_core.backends.base import GENERATION_NICE

    seen = {}

    def note(text, language):
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen["program"] = int(subprocess.run(["nice"], capture_output=True, text=True).stdout)
        return answer(text, language)

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with pool_of(FakeBackend("a", note), FakeBackend("b", answer)) as pool:
        assert isinstance(pool.generate("a", "Hello"), Output)
    # Raising priority back needs root: a test run niced further keeps its own niceness.
    expected = GENERATION_NICE if os.geteuid() == 0 or before <= GENERATION_NICE else before
    assert seen == {"thread": expected, "program": expected}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_the_pools_cache_key_names_what_generate_stored(tmp_path):
    cache = OutputCache(tmp_path)
    backend = FakeBackend("m", answer, voices={"en": "a", "de": "b"})
    with pool_of(backend, FakeBackend("n", answer), cache=cache) as pool:
        stored = pool.generate("m", "Hello", "de")
        key = pool.cache_key("m", "Hello", "de")
        assert cache.get(key, pool.arena.modality).text == stored.text
        assert len({key, pool.cache_key("m", "Hello"), pool.cache_key("m", "Hello!", "de"),
                    pool.cache_key("n", "Hello", "de")}) == 4  # fmt: skip
    with pool_of(FakeBackend("m", answer), FakeBackend("n", answer)) as pool:
        assert pool.cache_key("m", "Hello") is None  # no cache, no key
