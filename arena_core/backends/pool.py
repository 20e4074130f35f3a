"""The models of one arena at run time: who can be paired, generation with cache and timeout, outages.

:class:`ModelPool` wraps the arena's backends (injected, so tests pass fakes)
with what the app needs around each generation:

* **Cache first.** :meth:`ModelPool.generate` refuses a model that cannot run
  here (:meth:`Backend.availability`), then looks the output up in the
  :class:`~arena_core.backends.cache.OutputCache`; a hit returns at once (even
  for a paused model) and neither counts as a success nor records a latency.
* **Timeout.** A miss runs the backend in the pool's thread pool and waits at
  most ``settings.timeout`` (plus a short grace for the backend's own timeout to
  fire first). A thread cannot be killed: an in-process engine that overruns
  is reported as :class:`BackendTimeout` and finishes in the background, its
  result discarded. Subprocess backends stop themselves at the timeout; an HTTP
  read that dribbles does not (httpx times each read), so a model of its own with
  ``workload.MAX_OVERRUNS`` calls still running gets no new thread (they fail at once).
* **Outages, checks and probes** (the rules in :mod:`arena_core.backends.health`, the
  probes started by :mod:`arena_core.backends.probes`).
  Repeated failures pause a model for a while. A failure on a prompt a visitor
  typed (``trusted=False``) says as much about the prompt as about the model
  (twelve requests of ``"\u200d"`` must not pause five voices), so it does not
  count: it starts a *probe* instead, one of the arena's own prompts asked in the
  background, bypassing the cache, whose result counts. Nor does the load typed
  prompts make (:mod:`~arena_core.backends.workload`): a probe waits until no typed
  generation runs on its engine, and a timeout that typed work on the same engine
  overlapped, or that came before the generation ran its full timeout, is not
  counted. An engine takes ``settings.max_typed_per_engine`` typed generations at
  once; more are refused. The engines' locks are process-wide (eSpeak NG speaks in
  several arenas), so the pools of a process share one account of that load
  (:func:`engine_workload`, passed as ``workload``). Remote models
  (``Backend.remote``) are held back ("checking the service") until
  :meth:`ModelPool.probe_remote`'s check of the arena's shortest prompt they speak
  succeeds; a failed check pauses them and they are checked again when it ends.
* **Languages.** ``language`` arguments take the prompt's category. A
  category counts as a language only if some model of the arena declares it
  (``voices:`` keys or ``language:``); then only models that speak it are
  paired on it and generate with its voice. Other categories (the English
  arena's topics) restrict nothing.
* **Latency.** Wall time of each successful uncached generation, measured with
  the injected clock; :meth:`median_latency` is the median of the most recent
  ``settings.latency_window``.

All methods are thread-safe: the health records (:class:`ModelHealth`) have their
own lock, never held while generating.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from arena_core.backends.base import (
    Backend,
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    EngineBusy,
    describe_exception,
    lower_thread_priority,
    normalize_language,
)
from arena_core.backends.cache import OutputCache
from arena_core.backends.factory import make_backend
from arena_core.backends.health import ModelHealth, ModelStatus
from arena_core.backends.output import Output, implausible
from arena_core.backends.probes import Postponed, Probes
from arena_core.backends.started import Started, error_or
from arena_core.backends.workload import QUEUED, Workload, engine_workload
from arena_core.registry import Arena

logger = logging.getLogger(__name__)

#: Extra seconds the pool waits beyond the timeout, so a backend's own timeout (which cleans up) fires first.
TIMEOUT_GRACE = 0.5


@dataclass(frozen=True)
class PoolSettings:
    """How patient the pool is with models."""

    #: Seconds one generation may take.
    timeout: float = 30.0
    #: Consecutive failures that pause a model.
    failures_before_pause: int = 3
    #: Seconds a paused model stays out of pairing before it is retried.
    pause_seconds: float = 300.0
    #: Recent successful generations the median latency is taken over.
    latency_window: int = 100
    #: Seconds a generation's time stays out of :meth:`ModelPool.median_latency`: past a
    #: battle's life in the Space, where the two times it added named its models on the board.
    latency_delay: float = 0.0
    #: Generations running at once (each battle uses two).
    max_workers: int = 8
    #: Seconds between two probes of one model after failures on typed prompts.
    probe_interval: float = 30.0
    #: Typed-prompt generations one engine runs or queues at once; more are refused, so
    #: one visitor cannot keep an engine (and the probes waiting for it) busy.
    max_typed_per_engine: int = 2

    def __post_init__(self):
        if (self.timeout <= 0 or self.pause_seconds < 0 or self.failures_before_pause < 1
                or self.max_typed_per_engine < 1):  # fmt: skip
            raise ValueError(f"invalid pool settings: {self}")


class ModelPool:
    """The backends of one arena with cache, timeouts, outage pausing and latency records.

    ``workload`` is the typed load on the process's engines (:func:`engine_workload`): give
    every pool of a process the same one, with its limits and clock (they apply, not the
    pool's ``settings``); without it the pool keeps an account of its own.

    Example::

        pool = ModelPool.from_arena(registry.arena("tts-en"), cache=OutputCache("cache/"))
        a, b = pool.generate_pair("espeak-ng/en-us", "piper/joe", "Hello there.")
    """

    def __init__(
        self,
        arena: Arena,
        backends: Mapping[str, Backend],
        *,
        cache: OutputCache | None = None,
        clock: Callable[[], float] = time.monotonic,
        settings: PoolSettings | None = None,
        workload: Workload | None = None,
    ):
        missing = [m.id for m in arena.models if m.id not in backends]
        extra = sorted(set(backends) - {m.id for m in arena.models})
        if missing or extra:
            raise ValueError(
                f"arena {arena.id!r}: no backend for {missing}, backends for unknown models {extra}"
            )
        self.arena = arena
        self.settings = settings or PoolSettings()
        self._backends = dict(backends)
        self._languages = frozenset().union(*(b.languages or () for b in self._backends.values()))
        self._cache = cache
        self._native_rates: dict[str, int] = {}  # model id -> Hz of its outputs (native_rate)
        self._clock = clock
        #: Failures, pauses, checks and latencies of each model (the pool's shared state).
        self.health = ModelHealth(self._backends, self.settings, clock)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.settings.max_workers, thread_name_prefix=f"arena-{arena.id}",
            initializer=lower_thread_priority,
        )  # fmt: skip
        self._prober = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"arena-{arena.id}-probe",
            initializer=lower_thread_priority,
        )  # fmt: skip
        #: Typed generations in flight per engine, in every pool that shares it: what a
        #: failure may be blamed on. One of its own unless given (a process with one pool).
        self._workload = engine_workload(self.settings, clock) if workload is None else workload
        #: Which prompt to probe a model with, and when, on ``_prober`` (``probes.py``).
        self._probes = Probes(arena, self._backends, self.health, self._prober,
                              serves=self.serves, generate=self._generate_probe,
                              wait_turn=self._wait_turn)  # fmt: skip

    @classmethod
    def from_arena(
        cls, arena: Arena, *, env: Mapping[str, str] = os.environ, **kwargs
    ) -> ModelPool:
        """Build every model's backend with :func:`make_backend` (raises ``BackendConfigError``);
        ``kwargs`` as for the constructor (the process's ``workload`` when it has several pools)."""
        backends = {m.id: make_backend(m, arena.modality, env) for m in arena.models}
        return cls(arena, backends, **kwargs)

    # -- status --------------------------------------------------------------------------

    def status(self) -> dict[str, ModelStatus]:
        """Every model's availability, pause and language coverage, in registry order."""
        now = self._clock()
        pauses = self.health.pauses()
        statuses = {}
        for model_id, backend in self._backends.items():
            pause, availability = pauses[model_id], backend.availability()
            statuses[model_id] = ModelStatus(
                model_id=model_id,
                available=availability.ok,
                reason=availability.reason,
                paused_until=pause.until,
                retry_in=None if pause.until is None else pause.until - now,
                consecutive_failures=pause.failures,
                languages=backend.languages,
                pause_reason=pause.reason,
            )
        return statuses

    def pairable(self, language: str | None = None) -> list[str]:
        """Models that may be drawn now: available, not paused, and able to speak the prompt's language.

        Unverified models whose pause has ended get their probe started here, and
        probes postponed for an engine whose typed work has become stuck.
        """
        self._workload.run_due()
        self._probes.recheck_due()
        return [
            model_id
            for model_id, status in self.status().items()
            if status.pairable and self.serves(model_id, language)
        ]

    def serves(self, model_id: str, language: str | None) -> bool:
        """Whether a model can answer a prompt of this category (see "Languages" above)."""
        return self._backends[model_id].serves(self.language_of(language))

    def language_of(self, category: str | None) -> str | None:
        """A prompt category as a language code if some model declares it, else None."""
        if category is None or normalize_language(category) not in self._languages:
            return None
        return normalize_language(category)

    def cache_key(self, model_id: str, text: str, category: str | None = None) -> str | None:
        """The output cache's key of ``model_id`` speaking ``text`` (None without a cache),
        the one :meth:`generate` looks up: names the output without reading it."""
        if self._cache is None:
            return None
        backend = self._backends[model_id]
        return self._cache.key(model_id, text, backend.version, self.language_of(category))

    def native_rate(self, model_id: str, text: str, category: str | None = None) -> int | None:
        """The sample rate (Hz) of the model's own audio, before delivery resampled it: a
        style covariate of the vote. Learned from the model's outputs; a model served only
        from shaped clips since start-up reads its cached output for ``text`` once."""
        rate = self._native_rates.get(model_id)
        if rate is None and self.arena.modality == "audio":
            key = self.cache_key(model_id, text, category)
            cached = self._cache.get(key, "audio") if key is not None else None
            if cached is not None:
                rate = self._native_rates[model_id] = cached.sample_rate
        return rate

    def model_version(self, model_id: str) -> str | None:
        """The model's version for the vote record (see :attr:`Backend.model_version`)."""
        return self._backends[model_id].model_version

    def remote(self, model_id: str) -> bool:
        """Whether the model's generations are calls to a hosted service (paid, rate-limited)."""
        return self._backends[model_id].remote

    def median_latency(self, model_id: str) -> float | None:
        """Median seconds of recent successful uncached generations (but the last
        ``settings.latency_delay`` seconds'), or None before the first."""
        return self.health.median_latency(model_id)

    # -- generation ----------------------------------------------------------------------

    def generate(self, model_id: str, text: str, language: str | None = None, *,
                 trusted: bool = True) -> Output:  # fmt: skip
        """One output for ``text`` (cache first); raises :class:`BackendError` on any failure.

        ``trusted`` False marks a typed prompt: a failure on it does not count
        toward the model's pause, but probes the model on a known-good prompt.
        """
        return self._finish(self._start(model_id, text, self.language_of(language), trusted))

    def generate_pair(
        self, model_a: str, model_b: str, text: str, language: str | None = None, *,
        trusted: bool = True,
    ) -> tuple[Output | BackendError, Output | BackendError]:  # fmt: skip
        """Both sides of a battle, generated concurrently; each side is an Output or the error it raised.

        Errors are returned, not raised, so the app can keep the good side and
        redraw only the failed one. ``trusted`` as in :meth:`generate`.
        """
        if model_a == model_b:
            raise ValueError(f"a battle needs two different models, got {model_a!r} twice")
        language = self.language_of(language)
        # Start both before waiting for either, so they run at the same time.
        starts = [error_or(self._start, m, text, language, trusted) for m in (model_a, model_b)]
        first, second = (
            s if isinstance(s, BackendError) else error_or(self._finish, s) for s in starts
        )
        return first, second

    def _start(self, model_id: str, text: str, language: str | None, trusted: bool = True, *,
               use_cache: bool = True, probe: bool = False) -> Started:  # fmt: skip
        """Refuse a model that cannot run here, serve a cache hit, refuse a paused model, or submit.

        ``probe`` (a health check): no cache, and run even if the model is paused.
        """
        use_cache = use_cache and not probe
        backend = self._backends[model_id]  # KeyError for a model not in this arena
        availability = backend.availability()
        if not availability.ok:
            raise BackendUnavailable(model_id, availability.reason)
        key = self._cache.key(model_id, text, backend.version, language) if self._cache else None
        if key is not None and use_cache:
            cached = self._cache.get(key, self.arena.modality)
            doubt = None if cached is None else implausible(cached, text)
            if doubt is not None:  # the same bar as a fresh output: regenerated, then replaced
                logger.warning("ignoring a cached output of %s: %s", model_id, doubt)
            elif cached is not None:
                self._learn_rate(model_id, cached)
                return Started(model_id, key, output=cached)
        if not probe:
            self.health.refuse_if_paused(model_id)
        if not backend.serves(language):
            raise BackendUnavailable(model_id, f"does not speak {language!r}")
        ticket = self._workload.admit(backend.engine, trusted or probe)
        if ticket is None:  # refused before it ran: says nothing of the model, so no probe
            raise EngineBusy(model_id, "busy with other typed prompts, try again soon")
        began = self._clock()
        future = self._workload.submit(self._executor, ticket, backend.generate, text,
                                       self.settings.timeout, language,
                                       capped=backend.shared_engine is None)  # fmt: skip
        return Started(model_id, key, future=future, began=began, trusted=trusted or probe,
                        text=text, ticket=ticket, probe=probe)  # fmt: skip

    def _finish(self, started: Started) -> Output:
        """Wait for a submitted generation, then record its outcome and cache its output."""
        if started.output is not None:
            return started.output
        model_id = started.model_id
        try:
            limit = self.settings.timeout + TIMEOUT_GRACE  # real seconds: the wait is real
            done = started.future.done()  # refused at once (``Workload.submit``): no wait
            output = started.future.result(0 if done else started.ticket.patience(
                limit, probe=started.probe))  # fmt: skip
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            if not started.future.cancel():  # queued: cancelled; running: counts (``overran``)
                self._workload.overran(started.ticket)
            error = BackendTimeout(model_id, f"no output within {self.settings.timeout:g} s")
            self._failed(started, error)
            raise error from None
        except BackendError as exc:
            self._failed(started, exc)
            raise
        except Exception as exc:  # a backend that broke its contract still must not crash a battle
            error = BackendError(model_id, describe_exception(exc))
            self._failed(started, error)
            raise error from exc
        doubt = implausible(output, started.text)
        if doubt is not None:
            error = BackendError(model_id, doubt)
            self._failed(started, error)
            raise error
        self.health.record_success(model_id, self._clock() - started.began, probe=started.probe)
        self._learn_rate(model_id, output)
        if started.key is not None:
            self._cache.put(started.key, output)  # a failed write is the cache's to log
        return output

    def _learn_rate(self, model_id: str, output: Output) -> None:
        if output.modality == "audio":
            self._native_rates[model_id] = output.sample_rate

    def _failed(self, started: Started, error: BackendError) -> None:
        """Count a failure on a known-good prompt unless the load caused it (``Workload.excuse``);
        probe the model after one on a typed prompt or beside typed work on its engine."""
        ticket = started.ticket
        if started.trusted:
            returned = started.future.done() and not started.future.cancelled()
            ticket.excuse = self._workload.excuse(
                ticket, timed_out=isinstance(error, BackendTimeout), returned=returned,
                timeout=self.settings.timeout)  # fmt: skip
            if not ticket.excuse:
                self.health.record_failure(started.model_id, error)
                return
        why = ticket.excuse or "a typed prompt"
        logger.info("%s failed, not counted (%s): %s", started.model_id, why, error)
        if why != QUEUED:  # a generation that never had its time says nothing: no probe
            self._probes.probe(started.model_id)

    def _wait_turn(self, model_id: str, callback) -> bool:
        """Whether the model's engine runs no typed generation (else ``callback`` once it does not)."""
        return self._workload.when_idle(self._backends[model_id].engine, callback)

    def _generate_probe(self, model_id: str, prompt) -> Output:
        """One probe's generation (:mod:`~arena_core.backends.probes`): no cache, run even if
        the model is paused; its outcome counts (:meth:`_finish`) unless excused, then
        :class:`Postponed`."""
        language = self.language_of(prompt.category)
        started = self._start(model_id, prompt.text, language, probe=True)
        try:
            return self._finish(started)
        except BackendError as exc:
            if started.ticket is not None and started.ticket.excuse:
                raise Postponed(started.ticket.excuse) from exc
            raise

    def probe_remote(self) -> dict[str, concurrent.futures.Future]:
        """Check every available remote model once, in the background, before it is paired.

        Each is asked for the arena's shortest prompt it speaks (a cheap call);
        until that succeeds it is held back (see "Remote models" above).
        Returns the probes' futures by model id (for tests and logs).
        """
        return self._probes.probe_remote()

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop accepting work; running generations finish in the background."""
        self._prober.shutdown(wait=False, cancel_futures=True)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ModelPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
