"""The start-up check of hosted models: no battle is spent on a service that does not answer.

The backends are fakes flagged ``remote`` (as every hosted backend is), time is
an injected clock, and the checks run on the pool's probe thread, which a test
drains by submitting a no-op behind them.
"""

from __future__ import annotations

import os

import pytest
from test_backend_pool import Clock, FakeBackend, answer, broken

from arena_core.backends import BackendError, BackendUnavailable, ModelPool, PoolSettings
from arena_core.backends.health import CHECKING
from arena_core.registry import Arena, BackendSpec, Model, Prompt
from arena_core.space.config import Settings
from arena_core.space.startup import build_service

PAUSE = 300.0
SETTINGS = PoolSettings(timeout=5.0, failures_before_pause=3, pause_seconds=PAUSE)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RemoteFake(FakeBackend):
    remote = True


#: Seconds to wait for what takes milliseconds: generous, as a busy CI machine can stall a
#: thread for seconds, and a wait that is met returns at once.
PATIENCE = 60


def pool_with(*backends, clock) -> ModelPool:
    models = tuple(Model(id=b.model_id, name=b.model_id, backend=BackendSpec("fake"))
                   for b in backends)  # fmt: skip
    prompts = (Prompt("long", "A much longer sentence to read aloud."), Prompt("short", "Hi."))
    arena = Arena(id="t", title="T", modality="text", models=models, prompts=prompts)
    return ModelPool(arena, {b.model_id: b for b in backends}, clock=clock, settings=SETTINGS)


def drain(pool: ModelPool) -> None:
    pool._prober.submit(lambda: None).result(timeout=PATIENCE)


def test_hosted_models_are_held_back_until_their_check_passes():
    clock = Clock()
    hosted, local = RemoteFake("hosted", answer), FakeBackend("local", answer)
    with pool_with(hosted, local, clock=clock) as pool:
        gate = _Gate()
        hosted.behave = gate
        futures = pool.probe_remote()
        assert list(futures) == ["hosted"]  # local engines are not checked
        status = pool.status()["hosted"]
        assert status.state == "paused" and status.pause_reason == CHECKING
        assert pool.pairable() == ["local"]
        with pytest.raises(BackendUnavailable, match=CHECKING):
            pool.generate("hosted", "Hi.")
        gate.open()
        futures["hosted"].result(timeout=PATIENCE)
        assert pool.pairable() == ["hosted", "local"]
        assert pool.status()["hosted"].pause_reason == ""
    assert hosted.calls == [("Hi.", None)]  # the arena's shortest prompt, once


def test_a_hosted_model_that_fails_its_check_is_paused_with_the_reason_and_rechecked():
    clock = Clock()
    hosted = RemoteFake("hosted", broken)
    with pool_with(hosted, FakeBackend("local", answer), clock=clock) as pool:
        pool.probe_remote()["hosted"].result(timeout=PATIENCE)
        status = pool.status()["hosted"]
        assert status.state == "paused"  # after one failure, not three
        assert status.pause_reason == "HTTP 503 from the service"
        assert status.retry_in == PAUSE
        assert pool.pairable() == ["local"]
        with pytest.raises(BackendUnavailable, match="paused after its service check failed"):
            pool.generate("hosted", "Hi.")

        clock.advance(PAUSE + 1)  # the pause ends: checked again, not offered to a battle
        assert pool.pairable() == ["local"]
        drain(pool)
        assert len(hosted.calls) == 2
        assert pool.status()["hosted"].state == "paused"  # failed again: paused again

        clock.advance(PAUSE + 1)
        hosted.behave = answer
        assert pool.pairable() == ["local"]
        drain(pool)
        assert pool.pairable() == ["hosted", "local"]
    assert len(hosted.calls) == 3


def test_no_check_for_hosted_models_that_cannot_run_here():
    hosted = RemoteFake("hosted", answer, ok=False)  # e.g. HF_TOKEN not set
    with pool_with(hosted, FakeBackend("local", answer), clock=Clock()) as pool:
        assert pool.probe_remote() == {}
        assert pool.status()["hosted"].state == "unavailable"
    assert hosted.calls == []


def test_start_up_checks_nothing_without_a_token(tmp_path):
    # No HF_TOKEN here: the hosted models of the default registry are unavailable, so the
    # start-up check calls nothing (the real services cannot be reached from this machine).
    settings = Settings(registry=os.path.join(ROOT, "registry.yaml"), data_dir=tmp_path)
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    try:
        status = service.model_status()
        assert status["tts-en/space:NeuralFalcon/Pocket-TTS"] == "HF_TOKEN not set"
        assert status["tts-en/espeak-ng/en-us"] == "available"
        for pool in service.pools.values():
            assert pool.health.settled()
    finally:
        service.close()


def test_the_pools_of_all_arenas_share_one_workload(tmp_path):
    # The engines' locks are process-wide and eSpeak NG speaks in several arenas: typed
    # work of one arena must excuse, postpone and cap another's (test_pool_typed_load.py).
    settings = Settings(registry=os.path.join(ROOT, "registry.yaml"), data_dir=tmp_path)
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    try:
        espeak = [pool for pool in service.pools.values()
                  if any(b.engine == "espeak-ng" for b in pool._backends.values())]  # fmt: skip
        assert len(espeak) >= 2
        assert len({id(pool._workload) for pool in service.pools.values()}) == 1
    finally:
        service.close()


def test_a_paused_model_shows_why_in_the_service_status(tmp_path):
    settings = Settings(registry=os.path.join(ROOT, "registry.yaml"), data_dir=tmp_path)
    service = build_service(settings, env={"PATH": os.environ.get("PATH", "")})
    try:
        pool = service.pools["tts-en"]
        error = BackendError("espeak-ng/en-us", "HTTP 502 from the service")
        pool.health.mark_unverified("espeak-ng/en-us")
        pool.health.record_failure("espeak-ng/en-us", error)
        assert service.model_status()["tts-en/espeak-ng/en-us"] == (
            "paused: HTTP 502 from the service"
        )
    finally:
        service.close()


class _Gate:
    """A behaviour that blocks until opened, then answers."""

    def __init__(self):
        import threading

        self._event = threading.Event()

    def open(self):
        self._event.set()

    def __call__(self, text, language):
        assert self._event.wait(timeout=PATIENCE)
        return answer(text, language)
