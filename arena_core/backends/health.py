"""Each model's health in a pool: failures, pauses, start-up checks, probes and latencies.

The rules (the pool's docstring tells the whole story):

* **Outages.** ``settings.failures_before_pause`` consecutive failures pause a
  model for ``settings.pause_seconds``. When the pause ends it is retried; one
  more failure pauses it again at once (only a success resets the count).
* **Checks.** A model marked *unverified* (a remote model before its first
  check, or one that failed it) is held back until a probe succeeds; a failure
  while unverified pauses it at once with the failure as the reason.
* **Probes.** At most one probe per model runs at a time, and at most one per
  ``settings.probe_interval`` seconds, so a flood of bad prompts cannot turn into
  a flood of probes.

Kept apart from :class:`~arena_core.backends.pool.ModelPool` because this is the
pool's only shared mutable state: one lock guards every record, and no method
here generates, waits or calls a backend, so the lock is never held for long.
"""

from __future__ import annotations

import logging
import statistics
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from arena_core.backends.base import BackendError, BackendUnavailable

if TYPE_CHECKING:  # the pool imports this module
    from arena_core.backends.pool import PoolSettings

logger = logging.getLogger(__name__)

#: Why an unverified remote model is held back while its check runs.
CHECKING = "checking the service before its first battle"


@dataclass(frozen=True)
class ModelStatus:
    """One model's state as the app shows it at start-up and on the status page."""

    model_id: str
    available: bool
    reason: str
    #: When the pause ends, on the pool's clock (monotonic by default: not a wall-clock time).
    paused_until: float | None
    #: Seconds until the pause ends, for display ("retried in 4 min").
    retry_in: float | None
    consecutive_failures: int
    languages: frozenset[str] | None
    #: Why the model is paused (the last failure, or the start-up check still running); "" if not.
    pause_reason: str = ""

    @property
    def state(self) -> str:
        """``available``, ``unavailable`` or ``paused``."""
        if not self.available:
            return "unavailable"
        return "paused" if self.paused_until is not None else "available"

    @property
    def pairable(self) -> bool:
        return self.state == "available"


@dataclass(frozen=True)
class Pause:
    """A model's pause as seen at one instant: what :class:`ModelStatus` shows of its health."""

    #: When the pause ends (None when not paused).
    until: float | None
    reason: str
    failures: int


@dataclass
class _Record:
    """Mutable per-model record; only touched under :class:`ModelHealth`'s lock."""

    failures: int = 0
    paused_until: float | None = None
    latencies: deque = field(default_factory=deque)
    #: ``(clock time, seconds)`` of generations too recent to be in ``latencies`` yet
    #: (``PoolSettings.latency_delay``).
    fresh: deque = field(default_factory=deque)
    #: Clock time of the last probe started, None before the first.
    last_probe: float | None = None
    probing: bool = False
    #: Not paired until a probe succeeds (a remote model not yet checked, or that failed its check).
    unverified: bool = False
    #: The reason of the last failure, "" after a success.
    last_error: str = ""


class ModelHealth:
    """The health records of a pool's models, thread-safe, on an injected clock."""

    def __init__(self, model_ids: Iterable[str], settings: PoolSettings,
                 clock: Callable[[], float]):  # fmt: skip
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        window = settings.latency_window
        self._records = {m: _Record(latencies=deque(maxlen=window)) for m in model_ids}

    def pauses(self) -> dict[str, Pause]:
        """Every model's pause now; an unverified model whose pause ended is paused "now"
        (held back until its check passes)."""
        now = self._clock()
        with self._lock:
            records = {m: (r.failures, r.paused_until, r.unverified, r.last_error)
                       for m, r in self._records.items()}  # fmt: skip
        pauses = {}
        for model_id, (failures, until, unverified, last_error) in records.items():
            paused = until is not None and until > now
            if unverified and not paused:
                until, paused = now, True
            pauses[model_id] = Pause(until if paused else None,
                                     (last_error or CHECKING) if paused else "", failures)  # fmt: skip
        return pauses

    def refuse_if_paused(self, model_id: str) -> None:
        """Raise :class:`BackendUnavailable` for a paused or unverified model."""
        now = self._clock()
        with self._lock:
            until = self._records[model_id].paused_until
            unverified = self._records[model_id].unverified
        if until is not None and until > now:
            why = "its service check failed" if unverified else "repeated failures"
            raise BackendUnavailable(
                model_id, f"paused after {why}, retried in {until - now:.0f} s"
            )
        if unverified:
            raise BackendUnavailable(model_id, f"paused: {CHECKING}")

    def record_success(self, model_id: str, seconds: float, *, probe: bool = False) -> None:
        """A generation (or probe) succeeded in ``seconds``: the model is healthy and checked.
        A probe's time counts at once: no battle is waiting for its output."""
        with self._lock:
            record = self._records[model_id]
            record.failures = 0
            record.paused_until = None
            record.unverified, record.last_error = False, ""
            if probe:
                record.latencies.append(max(seconds, 0.0))
            else:
                record.fresh.append((self._clock(), max(seconds, 0.0)))
            self._settle(record)

    def record_failure(self, model_id: str, error: BackendError) -> None:
        """A failure on a known-good prompt: counted, and a pause when enough in a row."""
        now = self._clock()
        with self._lock:
            record = self._records[model_id]
            record.failures += 1
            record.last_error = error.reason
            failures = record.failures
            if failures >= self._settings.failures_before_pause or record.unverified:
                record.paused_until = now + self._settings.pause_seconds
        logger.warning("generation failed (%d in a row): %s", failures, error)

    def median_latency(self, model_id: str) -> float | None:
        """Median seconds of recent successful uncached generations, or None before the first
        (those of the last ``latency_delay`` seconds left out, see :meth:`_settle`)."""
        with self._lock:
            record = self._records[model_id]
            self._settle(record)
            latencies = list(record.latencies)
        return statistics.median(latencies) if latencies else None

    def _settle(self, record: _Record) -> None:
        """Move the generation times older than ``latency_delay`` into the median's window
        (under the lock). Until then a time could name the models of a battle not yet voted
        on: a battle's two generations are the only ones that move two medians at once."""
        settled = self._clock() - self._settings.latency_delay
        while record.fresh and record.fresh[0][0] <= settled:
            record.latencies.append(record.fresh.popleft()[1])

    def mark_unverified(self, model_id: str) -> None:
        """Hold the model back until a probe succeeds."""
        with self._lock:
            self._records[model_id].unverified = True

    def claim_probe(self, model_id: str) -> bool:
        """Whether a probe may start now (none running, none within the interval); if so,
        it is marked running until :meth:`release_probe`."""
        now = self._clock()
        with self._lock:
            record = self._records[model_id]
            recent = (record.last_probe is not None
                      and now - record.last_probe < self._settings.probe_interval)  # fmt: skip
            if record.probing or recent:
                return False
            record.probing, record.last_probe = True, now
            return True

    def release_probe(self, model_id: str) -> None:
        with self._lock:
            self._records[model_id].probing = False

    def due_checks(self) -> list[str]:
        """Unverified models with no probe running whose pause (if any) has ended."""
        now = self._clock()
        with self._lock:
            return [m for m, r in self._records.items() if r.unverified and not r.probing
                    and (r.paused_until is None or r.paused_until <= now)]  # fmt: skip

    def checks_running(self) -> list[str]:
        """Models whose start-up check has not concluded (unverified and not yet paused)."""
        with self._lock:
            return [m for m, r in self._records.items()
                    if r.unverified and r.paused_until is None]  # fmt: skip

    def settled(self) -> bool:
        """No probe running and no model unverified."""
        with self._lock:
            return not any(r.probing or r.unverified for r in self._records.values())
