"""The model pool and the output cache under stress: hangs, overruns, a vanished folder.

Found by the backend hunt. Each test names the input, and says what a visitor or the
operator saw before the fix. Backends are fakes that hang on purpose (a thread cannot
be killed, so a hang is an event the test sets at the end); time for pauses is an
injected clock.
"""

from __future__ import annotations

import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType

import numpy as np
import pytest
from fakes import Clock, FakeBackend

from arena_core.backends import (
    Backend,
    BackendTimeout,
    ModelPool,
    Output,
    OutputCache,
    PoolSettings,
    make_backend,
)
from arena_core.backends.cache import SECRET_FILE
from arena_core.backends.workload import MAX_OVERRUNS
from arena_core.registry import Arena, BackendSpec, Model, Prompt

#: Seconds to wait for what takes milliseconds (a met wait returns at once).
PATIENCE = 60
PAUSE = 300.0


class Fake(FakeBackend):
    """A model of its own (no shared engine lock), as a hosted model is: ``hang`` set
    makes every call block until the test ends, ignoring its timeout."""

    modalities = frozenset({"text", "audio"})

    def __init__(self, model_id: str, hang: threading.Event | None = None, modality="text"):
        model = Model(id=model_id, name=model_id, backend=BackendSpec("fake"))
        Backend.__init__(self, model, modality)
        self.hang, self.calls = hang, 0

    def _generate(self, text, timeout, language):
        self.calls += 1
        if self.hang is not None:
            self.hang.wait(PATIENCE)  # overruns its timeout, as a stalled HTTP read does
        return tone() if self.modality == "audio" else Output.from_text(f"said: {text}")


def pool_of(*backends: Backend, clock: Clock, **overrides) -> ModelPool:
    arena = Arena(id="t", title="T", modality=backends[-1].modality,
                  models=tuple(Model(id=b.model_id, name=b.model_id, backend=BackendSpec("fake"))
                               for b in backends),
                  prompts=(Prompt("p", "Hello"),))  # fmt: skip
    options = dict(timeout=0.2, failures_before_pause=1, pause_seconds=PAUSE,
                   max_workers=2) | overrides  # fmt: skip
    return ModelPool(arena, {b.model_id: b for b in backends}, clock=clock,
                     settings=PoolSettings(**options))  # fmt: skip


@pytest.fixture
def hang():
    event = threading.Event()
    yield event
    event.set()  # let the abandoned worker threads finish


# -- a hanging model must not wedge the pool ---------------------------------------------------


def test_a_model_that_hangs_after_every_pause_does_not_use_up_the_pools_workers(hang):
    """A model whose calls never return (a hosted service that keeps its connection open
    and dribbles: httpx's timeout is per read, so the call outlives ``ARENA_TIMEOUT``)
    was retried after each pause on a new worker thread, and each retry kept its thread.
    Once the abandoned calls filled the pool's workers (``max_workers``, 8 in the Space:
    about 25 minutes of 300 s pauses), every other model's generation waited in the queue,
    timed out as "it waited for a free worker" (never counted: the hung model showed as
    available too) and every battle of the arena failed until a restart. A model with
    ``MAX_OVERRUNS`` calls still overrunning now gets no new thread: its generation fails
    at once, and counts."""
    clock = Clock()
    stuck = Fake("stuck", hang)
    with pool_of(stuck, Fake("a"), Fake("b"), clock=clock, max_workers=4) as pool:
        for _ in range(6):  # a pause, its end, the retry: again and again
            with pytest.raises(BackendTimeout):
                pool.generate("stuck", "Hello")
            assert pool.status()["stuck"].state == "paused"
            clock.now += PAUSE + 1
        assert stuck.calls == MAX_OVERRUNS, "a bounded number of hung calls, not one per retry"
        left, right = pool.generate_pair("a", "b", "Hello")
        assert isinstance(left, Output), left
        assert isinstance(right, Output), right


def test_a_model_whose_hung_calls_return_is_served_again(hang):
    """The refusal lasts only while the overrunning calls run: once they return, the
    model's next generation runs (the Space recovers without a restart)."""
    clock = Clock()
    stuck = Fake("stuck", hang)
    with pool_of(stuck, Fake("a"), clock=clock, max_workers=4) as pool:
        for _ in range(MAX_OVERRUNS + 1):  # the last one is refused at once
            with pytest.raises(BackendTimeout):
                pool.generate("stuck", "Hello")
            clock.now += PAUSE + 1
        assert stuck.calls == MAX_OVERRUNS
        stuck.hang = None
        hang.set()
        overrunning = pool._workload._engines[stuck.engine].overrunning
        deadline = time.monotonic() + PATIENCE
        while overrunning and time.monotonic() < deadline:  # the let-go calls return
            time.sleep(0.01)
        assert pool.generate("stuck", "Hello").text == "said: Hello"
        assert pool.status()["stuck"].state == "available"


def test_a_probe_of_a_model_still_hanging_is_refused_at_once_and_keeps_its_pause(hang):
    """A probe (after a typed prompt failed) of a model whose calls still hang took a
    worker thread for good too, or waited in the queue behind them and was not
    counted; now it fails at once and the model stays paused."""
    clock = Clock()
    stuck = Fake("stuck", hang)
    with pool_of(stuck, Fake("a"), clock=clock, max_workers=MAX_OVERRUNS) as pool:
        for _ in range(MAX_OVERRUNS):
            with pytest.raises(BackendTimeout):
                pool.generate("stuck", "Hello")
            clock.now += PAUSE + 1
        future = pool._probes.probe("stuck")
        assert future is not None
        future.result(timeout=PATIENCE)
        assert stuck.calls == MAX_OVERRUNS
        assert pool.status()["stuck"].state == "paused"


def test_a_model_sharing_an_engine_lock_is_not_capped(hang):
    """The cap is for models of their own: a shared engine's other calls wait for its
    lock at most their timeout and return, so they hold no worker for good, and a
    visitor's overrunning typed prompt must not turn its set prompts into refusals."""
    clock = Clock()
    shared = Fake("shared", hang)
    shared.shared_engine = "one-lock"
    with pool_of(shared, Fake("a"), clock=clock, max_workers=4) as pool:
        for _ in range(MAX_OVERRUNS + 1):
            with pytest.raises(BackendTimeout):
                pool.generate("shared", "Hello")
            clock.now += PAUSE + 1
        assert shared.calls == MAX_OVERRUNS + 1


class _Dribble(BaseHTTPRequestHandler):
    """Answers 200 with a long WAV, one byte every 50 ms, until the server's ``stop`` is set:
    a stalled upstream that keeps the connection alive."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.calls += 1
        self.send_response(200)
        self.send_header("Content-Type", "audio/wav")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        while not self.server.stop.wait(0.05):
            try:
                self.wfile.write(b"R")
                self.wfile.flush()
            except OSError:
                return


def test_a_real_hosted_client_on_a_dribbling_service_does_not_wedge_the_pool(monkeypatch):
    """The real ``hf-inference`` backend (``InferenceClient``, httpx) against a service on
    127.0.0.1 that sends a byte every 50 ms: each call outlives its 0.2 s timeout (httpx
    times each read, not the call), so every retry held a worker. The arena's other
    models must still be served after many retries of the stalled one."""
    import huggingface_hub.constants
    from huggingface_hub import InferenceClient  # noqa: F401 - imported now, not in the 0.2 s

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # 127.0.0.1 only
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Dribble)
    server.daemon_threads, server.calls, server.stop = True, 0, threading.Event()
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/tts"
    spec = BackendSpec("hf-inference", MappingProxyType({"model": "x/tts", "base_url": url}))
    hosted = make_backend(Model(id="hosted/x", name="x", backend=spec), "audio", {"HF_TOKEN": "t"})
    clock = Clock()
    try:
        others = Fake("a", modality="audio"), Fake("b", modality="audio")
        with pool_of(hosted, *others, clock=clock, max_workers=4) as pool:
            for _ in range(6):
                with pytest.raises(BackendTimeout):
                    pool.generate("hosted/x", "Hello")
                clock.now += PAUSE + 1
            left, right = pool.generate_pair("a", "b", "Hello")
            assert isinstance(left, Output), left
            assert isinstance(right, Output), right
            deadline = time.monotonic() + PATIENCE
            while not server.calls and time.monotonic() < deadline:  # a slow CI thread
                time.sleep(0.01)
            assert 1 <= server.calls <= MAX_OVERRUNS
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()


# -- the output cache's folder removed while the Space runs ----------------------------------


def tone() -> Output:
    return Output.from_audio(16000, (0.2 * np.sin(np.arange(8000) / 5)).astype(np.float32))


def test_the_cache_folder_deleted_at_run_time_is_made_again(tmp_path):
    """An operator who clears ``data/cache`` (or a temp cleaner) while the Space runs:
    every write failed from then on ("serving outputs uncached"), so every set prompt
    was generated again on each battle and the warm-up's work was lost until a restart.
    Now a write that finds its folder gone makes it again."""
    folder = tmp_path / "cache"
    cache = OutputCache(folder, max_bytes=10**7)
    assert cache.put(cache.key("m", "one", "v"), tone()) is not None
    shutil.rmtree(folder)
    key = cache.key("m", "two", "v")
    assert cache.put(key, tone()) is not None
    assert cache.write_failures == 0
    assert cache.get(key, "audio") is not None


def test_entries_written_after_the_folder_was_made_again_survive_a_restart(tmp_path):
    """The folder made again gets the process's secret back, so a restart (which reads the
    secret from the folder) finds what was written since, rather than a fresh secret that
    turns every entry into a miss."""
    folder = tmp_path / "cache"
    cache = OutputCache(folder, max_bytes=10**7)
    shutil.rmtree(folder)
    key = cache.key("m", "two", "v")
    assert cache.put(key, tone()) is not None
    assert (folder / SECRET_FILE).is_file()
    again = OutputCache(folder, max_bytes=10**7)
    assert again.key("m", "two", "v") == key
    assert again.get(key, "audio") is not None


def test_the_size_bound_holds_after_the_folder_was_made_again(tmp_path):
    """The count of bytes restarts from the new, empty folder: the budget is neither
    spent by entries deleted with the old folder nor exceeded."""
    folder = tmp_path / "cache"
    size = len(tone().to_bytes())
    cache = OutputCache(folder, max_bytes=size * 5)
    for i in range(4):
        cache.put(cache.key("m", f"old {i}", "v"), tone())
    shutil.rmtree(folder)
    for i in range(12):
        assert cache.put(cache.key("m", f"new {i}", "v"), tone()) is not None
        on_disk = sum(p.stat().st_size for p in folder.glob("*.wav"))
        assert on_disk <= size * 5
    assert cache.total_bytes == sum(p.stat().st_size for p in folder.glob("*.wav"))


def test_eviction_keeps_the_entries_served_from_memory(tmp_path):
    """With the memory layer on (``ARENA_CACHE_MEMORY_MB``, 256 by default) a hit is
    served from memory and never refreshes its file's time, the disk's record of use:
    when the folder passed its bound, the most played clips looked the oldest and were
    deleted first, so after a restart (or once memory dropped them) exactly those were
    generated again while clips nobody asked for stayed. Entries held in memory now
    count as the most recently used."""
    size = len(tone().to_bytes())
    cache = OutputCache(tmp_path, max_bytes=size * 5, memory_bytes=10**8)
    keys = [cache.key("m", f"prompt {i}", "v") for i in range(7)]
    for key in keys[:4]:
        cache.put(key, tone())
    cache._memory.pop(keys[1])  # one cold entry that memory no longer holds
    for _ in range(3):
        assert cache.get(keys[0], "audio") is not None  # the popular clip, from memory
    for key in keys[4:]:
        cache.put(key, tone())
    assert (tmp_path / f"{keys[0]}.wav").is_file()
    assert not (tmp_path / f"{keys[1]}.wav").exists()
