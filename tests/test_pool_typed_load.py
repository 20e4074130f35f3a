"""The load a visitor's typed prompts make is not an outage (ModelPool with workload.py).

An in-process engine that overruns its timeout keeps its thread and its lock (all
Kokoro voices share one). One visitor's typed prompts kept an engine busy, the probe
their failures started timed out behind them, and counted: healthy models were
paused by typed prompts alone. The engines here are fakes that hold a lock shared by
their voices, as the real ones do, and overrun until the test lets them go; time for
pauses and probe intervals is an injected clock.
"""

from __future__ import annotations

import contextlib
import threading
import time
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.backends import (
    Availability,
    Backend,
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    EngineBusy,
    ModelPool,
    Output,
    PoolSettings,
    engine_workload,
)
from arena_core.backends.base import VOICE_OPTIONS
from arena_core.backends.pool import TIMEOUT_GRACE
from arena_core.backends.workload import STUCK_TIMEOUTS, Workload
from arena_core.registry import Arena, BackendSpec, Model, Prompt

#: Seconds to wait for what takes milliseconds (a met wait returns at once).
PATIENCE = 60
PAUSE = 300.0
ARENA_PROMPT = "Hello"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Engine:
    """One process-wide engine: one call at a time, typed ``crafted`` prompts overrun."""

    def __init__(self, serial: bool = True) -> None:
        self.lock = threading.Lock() if serial else contextlib.nullcontext()
        self.release = threading.Event()  # crafted prompts finish only when set
        self.broken = False  # a real outage: every prompt hangs until ``release``


class Voice(Backend):
    """A voice of a shared :class:`Engine` (like Kokoro's voices), with the engine's lock."""

    type_name = "fake"
    modalities = frozenset({"text"})
    options_spec = MappingProxyType(dict(VOICE_OPTIONS))

    def __init__(self, model_id: str, engine: Engine, shared: str | None = None):
        super().__init__(Model(id=model_id, name=model_id, backend=BackendSpec("fake")), "text")
        self.shared_engine, self.core = shared, engine
        self.calls: list[str] = []
        self.threads: list[str] = []  # the worker thread of each call: whose pool ran it

    def _check_availability(self):
        return Availability.yes()

    def _engine_version(self):
        return "1"

    def _generate(self, text, timeout, language):
        self.calls.append(text)
        self.threads.append(threading.current_thread().name)
        lock = self.core.lock
        if isinstance(lock, contextlib.nullcontext):
            lock = threading.Semaphore(1)  # an engine that runs any number of calls at once
        if not lock.acquire(timeout=timeout):
            raise BackendTimeout(self.model_id, "the engine was busy for the whole timeout")
        try:
            if text.startswith("crafted") or self.core.broken:
                self.core.release.wait(PATIENCE)  # ignores its timeout, as in-process engines do
            if text.startswith("bad"):
                raise BackendError(self.model_id, "the engine returned no audio")
            return Output.from_text(f"said: {text}")
        finally:
            lock.release()


def pool_settings(**overrides) -> PoolSettings:
    options = dict(timeout=0.3, failures_before_pause=1, pause_seconds=PAUSE, max_workers=4,
                   probe_interval=30.0) | overrides  # fmt: skip
    return PoolSettings(**options)


def make_pool(*voices: Voice, clock: Clock, arena_id: str = "t", workload: Workload | None = None,
              **overrides) -> ModelPool:  # fmt: skip
    arena = Arena(id=arena_id, title="T", modality="text",
                  models=tuple(Model(id=v.model_id, name=v.model_id, backend=BackendSpec("fake"))
                               for v in voices),
                  prompts=(Prompt("p", ARENA_PROMPT),))  # fmt: skip
    return ModelPool(arena, {v.model_id: v for v in voices}, clock=clock,
                     settings=pool_settings(**overrides), workload=workload)  # fmt: skip


def make_arenas(arenas: dict[str, tuple[Voice, ...]], *, clock: Clock,
                **overrides) -> dict[str, ModelPool]:  # fmt: skip
    """One pool per arena sharing one workload, as ``build_service`` builds them."""
    workload = engine_workload(pool_settings(**overrides), clock)
    return {arena_id: make_pool(*voices, clock=clock, arena_id=arena_id, workload=workload,
                                **overrides)
            for arena_id, voices in arenas.items()}  # fmt: skip


def until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"waited {PATIENCE} s for {what}"
        time.sleep(0.01)


def probes_done(pool: ModelPool) -> None:
    pool._prober.submit(lambda: None).result(timeout=PATIENCE)


@pytest.fixture
def engine():
    core = Engine()
    yield core
    core.release.set()  # let the abandoned worker threads finish


def test_typed_prompts_that_keep_an_engine_busy_cannot_pause_its_voices(engine):
    # The attack: typed battles whose prompts overrun; each failure starts a probe of the
    # victim, which waited behind them for the lock and counted. Both voices share one
    # engine (one lock), so the victim's probe also waited for the other voice's overrun.
    clock = Clock()
    victim, other = Voice("victim", engine, "shared"), Voice("other", engine, "shared")
    interval = 1.0  # short, so the rounds stay well within STUCK_TIMEOUTS timeouts
    with make_pool(victim, other, clock=clock, max_typed_per_engine=4,
                   probe_interval=interval) as pool:  # fmt: skip
        for round_ in range(3):
            left, right = pool.generate_pair("victim", "other", f"crafted {round_}", trusted=False)
            assert isinstance(left, BackendError) and isinstance(right, BackendError)
            probes_done(pool)
            clock.now += interval + 0.1  # the next probe is allowed
        assert {m: s.state for m, s in pool.status().items()} == {
            "victim": "available", "other": "available"}  # fmt: skip
        assert pool.status()["victim"].consecutive_failures == 0
        assert ARENA_PROMPT not in victim.calls  # the probe waits for the engine to be free
        engine.release.set()  # the visitor's generations end: the postponed probes run now
        until(pool.health.settled, "the postponed probes to finish")
        assert ARENA_PROMPT in victim.calls and ARENA_PROMPT in other.calls
        assert pool.status()["victim"].state == "available"


def test_a_set_prompt_that_times_out_behind_typed_work_on_its_engine_is_not_counted(engine):
    clock = Clock()
    victim, other = Voice("victim", engine, "shared"), Voice("other", engine, "shared")
    spare = Voice("spare", Engine())
    with make_pool(victim, other, spare, clock=clock) as pool:
        with pytest.raises(BackendTimeout):
            pool.generate("other", "crafted", trusted=False)  # overruns, keeps the lock
        for _ in range(3):  # an uncached set prompt: its voice waits for the lock
            with pytest.raises(BackendTimeout, match="busy for the whole timeout"):
                pool.generate("victim", ARENA_PROMPT)
        assert pool.status()["victim"].state == "available"
        assert pool.pairable() == ["victim", "other", "spare"]


def test_a_probe_queued_behind_other_models_typed_work_counts_from_when_it_runs(engine):
    # One worker, taken by another engine's typed generation: the probe of the victim
    # (whose engine is free) waits in the queue, and that time is not its timeout.
    clock = Clock()
    victim, hog = Voice("victim", Engine()), Voice("hog", engine)
    with make_pool(victim, hog, clock=clock, max_workers=1) as pool:
        hogging = threading.Thread(target=_quietly(pool.generate, "hog", "crafted", trusted=False))
        hogging.start()
        until(lambda: hog.calls, "the hog to run")
        with pytest.raises(BackendTimeout):  # queued behind the hog: a typed failure, a probe
            pool.generate("victim", "typed words", trusted=False)
        # Long enough for a probe timed from submission to time out in the queue.
        time.sleep(4 * (pool.settings.timeout + TIMEOUT_GRACE))
        engine.release.set()
        until(lambda: ARENA_PROMPT in victim.calls, "the probe to run")
        probes_done(pool)
        hogging.join(PATIENCE)
        status = pool.status()["victim"]
        assert (status.state, status.consecutive_failures) == ("available", 0)


def test_a_broken_engine_is_still_paused_by_a_probe_on_an_idle_engine_and_comes_back():
    clock = Clock()
    core = Engine()
    dead, fine = Voice("dead", core, "shared"), Voice("fine", Engine())
    try:
        with make_pool(dead, fine, clock=clock) as pool:
            with pytest.raises(BackendError, match="no audio"):
                pool.generate("dead", "bad typed words", trusted=False)
            probes_done(pool)  # the engine is idle: the probe runs at once, and succeeds
            assert ARENA_PROMPT in dead.calls and pool.status()["dead"].state == "available"
            core.broken = True  # now it hangs on everything: a real outage
            with pytest.raises(BackendTimeout):
                pool.generate("dead", ARENA_PROMPT)  # nothing typed ran: counted
            status = pool.status()["dead"]
            assert status.state == "paused" and status.retry_in == PAUSE
            assert pool.pairable() == ["fine"]
            core.broken = False
            core.release.set()  # the hung call returns; the engine is healthy again
            clock.now += PAUSE + 1
            assert pool.pairable() == ["dead", "fine"]
            assert pool.generate("dead", ARENA_PROMPT).text == "said: Hello"
            assert pool.status()["dead"].consecutive_failures == 0
    finally:
        core.release.set()


def test_a_typed_prompt_that_wedges_the_engine_for_good_does_not_shield_it_forever():
    # A typed generation that never returns keeps the engine "busy"; past STUCK_TIMEOUTS
    # timeouts the engine is stuck, not busy, and its probe's timeout counts.
    clock = Clock()
    core = Engine()
    core.broken = True
    stuck, fine = Voice("stuck", core, "shared"), Voice("fine", Engine())
    try:
        with make_pool(stuck, fine, clock=clock) as pool:
            with pytest.raises(BackendTimeout):
                pool.generate("stuck", "typed words", trusted=False)
            probes_done(pool)
            assert pool.status()["stuck"].state == "available"  # probe postponed, not failed
            assert ARENA_PROMPT not in stuck.calls
            clock.now += pool.settings.timeout * STUCK_TIMEOUTS
            pool.pairable()  # battles look for stuck engines: the probe runs now
            until(lambda: pool.status()["stuck"].state == "paused", "the probe to pause it")
            assert "busy" in pool.status()["stuck"].pause_reason
    finally:
        core.release.set()


def test_contention_excuses_timeouts_only_a_fast_failure_still_counts(engine):
    clock = Clock()
    victim, other = Voice("victim", engine, "shared"), Voice("other", engine, "shared")
    with make_pool(victim, other, clock=clock) as pool:
        with pytest.raises(BackendTimeout):
            pool.generate("other", "crafted", trusted=False)
        engine.lock = threading.Lock()  # the next call does not wait: it fails at once
        with pytest.raises(BackendError, match="no audio"):
            pool.generate("victim", "bad set prompt")  # a known-good prompt it cannot speak
        assert pool.status()["victim"].state == "paused"


def test_an_engine_takes_a_few_typed_generations_at_once_and_refuses_more():
    clock = Clock()
    engine = Engine(serial=False)
    a, b, own = Voice("a", engine, "shared"), Voice("b", engine, "shared"), Voice("own", engine)
    pool = make_pool(a, b, own, clock=clock, max_typed_per_engine=2, max_workers=8)
    with contextlib.ExitStack() as stack:
        stack.callback(engine.release.set)
        stack.enter_context(pool)
        for model_id in ("a", "b"):
            with pytest.raises(BackendTimeout):
                pool.generate(model_id, "crafted", trusted=False)  # still running
        for model_id in ("a", "b"):  # the shared engine has its two
            with pytest.raises(BackendUnavailable, match="busy with other typed prompts"):
                pool.generate(model_id, "crafted again", trusted=False)
        assert [a.calls, b.calls] == [["crafted"], ["crafted"]]  # refused before the engine
        with pytest.raises(BackendTimeout):
            pool.generate("own", "crafted", trusted=False)  # an engine of its own: admitted
        assert all(s.consecutive_failures == 0 for s in pool.status().values())
        engine.release.set()
        until(lambda: pool._workload.when_idle("shared", lambda: None), "the engine to free")
        assert pool.generate("a", "typed words", trusted=False).text == "said: typed words"


# -- one engine, several arenas: the engines' locks are process-wide ------------------------


def test_typed_work_in_another_arena_cannot_pause_a_voice_of_the_same_engine(engine):
    # eSpeak NG speaks in tts-en and tts-ja through one library lock. A typed prompt of
    # tts-ja overran and kept it; tts-en's set prompt timed out behind it and counted,
    # because tts-en's pool only knew its own typed work.
    clock = Clock()
    pools = make_arenas({"en": (Voice("espeak/en", engine, "espeak-ng"), Voice("spare", Engine())),
                         "ja": (Voice("espeak/ja", engine, "espeak-ng"), Voice("spare2", Engine()))},
                        clock=clock)  # fmt: skip
    en, ja = pools["en"], pools["ja"]
    victim = en._backends["espeak/en"]
    with en, ja:
        with pytest.raises(BackendTimeout):  # a visitor's typed prompt in tts-ja overruns
            ja.generate("espeak/ja", "crafted words", trusted=False)
        for _ in range(3):  # tts-en's uncached set prompt waits for the lock
            with pytest.raises(BackendTimeout, match="busy for the whole timeout"):
                en.generate("espeak/en", ARENA_PROMPT)
        status = en.status()["espeak/en"]
        assert (status.state, status.consecutive_failures) == ("available", 0)
        assert en.pairable() == ["espeak/en", "spare"]
        probes_done(en)  # the probe those failures started waits for tts-ja's typed work
        assert victim.calls == [ARENA_PROMPT] * 3
        engine.release.set()  # tts-ja's generation ends: tts-en's probe runs, on tts-en's pool
        until(lambda: len(victim.calls) == 4 and en.health.settled(), "the probe to run")
        assert victim.threads[-1].startswith("arena-en_")
        assert en.status()["espeak/en"].state == "available"


def test_the_typed_cap_holds_for_the_engine_across_arenas():
    clock = Clock()
    engine = Engine(serial=False)
    pools = make_arenas({f"a{k}": (Voice(f"v{k}", engine, "espeak-ng"),
                                   Voice(f"w{k}", engine, "espeak-ng")) for k in range(3)},
                        clock=clock, max_typed_per_engine=2, max_workers=8)  # fmt: skip
    with contextlib.ExitStack() as stack:
        stack.callback(engine.release.set)
        for pool in pools.values():
            stack.enter_context(pool)
        with pytest.raises(BackendTimeout):
            pools["a0"].generate("v0", "crafted", trusted=False)  # still running
        with pytest.raises(BackendTimeout):
            pools["a1"].generate("v1", "crafted", trusted=False)  # the engine has its two
        for k in range(3):
            with pytest.raises(EngineBusy):
                pools[f"a{k}"].generate(f"w{k}", "crafted again", trusted=False)
        workload = pools["a2"]._workload
        assert workload.admit("espeak-ng", False) is None
        engine.release.set()
        until(lambda: workload.when_idle("espeak-ng", lambda: None), "the engine to free")
        assert pools["a2"].generate("v2", "typed", trusted=False).text == "said: typed"


def test_a_model_of_its_own_listed_by_two_arenas_is_two_engines():
    # Two arenas list the same model id, each with its own backend (its own client, or
    # lock): typed work on one neither excuses the other's outage nor counts in its cap.
    clock = Clock()
    mine, theirs = Engine(), Engine()
    theirs.broken = True  # every call hangs: a real outage
    pools = make_arenas({"a": (Voice("hosted/x", mine), Voice("spare", Engine())),
                         "b": (Voice("hosted/x", theirs), Voice("spare2", Engine()))},
                        clock=clock, max_typed_per_engine=1)  # fmt: skip
    try:
        with pools["a"], pools["b"]:
            with pytest.raises(BackendTimeout):
                pools["a"].generate("hosted/x", "crafted", trusted=False)  # keeps a's lock
            with pytest.raises(BackendTimeout):
                pools["b"].generate("hosted/x", ARENA_PROMPT)  # nothing typed on b's
            assert pools["b"].status()["hosted/x"].state == "paused"
            with pytest.raises(EngineBusy):  # a's engine has its one typed generation
                pools["a"].generate("hosted/x", "typed words", trusted=False)
            clock.now += PAUSE + 1
            theirs.broken = False
            theirs.release.set()
            assert pools["b"].generate("hosted/x", "typed words", trusted=False).text
    finally:
        mine.release.set()
        theirs.release.set()


def _quietly(function, *args, **kwargs):
    def run():
        with contextlib.suppress(BackendError):
            function(*args, **kwargs)

    return run


# -- the workload's bookkeeping against an independent account of intervals ----------------

_STEP = st.one_of(
    st.tuples(st.just("typed"), st.sampled_from("xy")),
    st.tuples(st.just("trusted"), st.sampled_from("xy")),
    st.tuples(st.just("release"), st.integers(0, 30)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, max_size=30), st.integers(1, 3))
def test_contended_means_a_typed_generation_overlapped_on_the_same_engine(steps, cap):
    """Whatever the order of admissions and returns, a generation is contended exactly
    when a typed one on its engine had not returned by the time it was admitted or was
    admitted after it; at most ``cap`` typed ones run per engine."""
    workload = Workload(max_typed=cap, stuck_after=1e9, clock=lambda: 0.0)
    admitted = []  # (ticket, step admitted)
    returned: dict[int, int] = {}  # ticket seq -> step of its first return
    for step, (kind, arg) in enumerate(steps):
        if kind == "release":
            if admitted:
                ticket, _ = admitted[arg % len(admitted)]
                workload.release(ticket)
                returned.setdefault(ticket.seq, step)
            continue
        running = [t for t, _ in admitted
                   if not t.trusted and t.engine == arg and t.seq not in returned]  # fmt: skip
        ticket = workload.admit(arg, trusted=kind == "trusted")
        if kind == "typed" and len(running) >= cap:
            assert ticket is None
            continue
        assert ticket is not None
        admitted.append((ticket, step))
    for ticket, step in admitted:
        if ticket.trusted:
            expected = any(not t.trusted and t.engine == ticket.engine
                           and returned.get(t.seq, len(steps)) > step
                           for t, _ in admitted)  # fmt: skip
            assert workload.contended(ticket) == expected
