"""How long a battle's answer is held, so its timing does not tell which engines ran.

Gradio 6 reports each event's processing time to the client (``duration`` and
``average_duration`` in the ``process_completed`` message, and the queue's
``rank_eta``/``eta`` estimates), and a client can time the request itself, so
hiding the field would not help: the time has to stop depending on the engines.
Both sides generate in parallel, so a battle takes as long as its slower side:
Piper needs 0.5-1.5 s for a sentence, eSpeak NG a few milliseconds.

* **Set prompts** are pre-generated and shaped by the warm-up; once an arena is
  warm, every set-prompt battle is served from the caches in a few
  milliseconds, whatever the engines, and is not held.
* **Typed prompts** (and set prompts before the warm-up is done) are held until
  a floor that depends only on the prompt's length and on which models *could*
  have been drawn: the slowest of them, as measured, times :data:`SLOW_MARGIN`,
  rounded up to :data:`QUANTUM`. A generation that overruns the floor (a loaded
  machine) is released at the next multiple of :data:`QUANTUM`, so an overrun
  shows only in coarse steps.

The price: a typed prompt answered by two fast engines waits as long as the
slowest engine would have taken (about 1-2 s for a sentence here). Each held
battle keeps one of the event's worker slots while it waits, without using CPU.
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Factor over the slowest model's estimated time: room for a busier machine than measured.
SLOW_MARGIN = 1.5
#: Held answers are released on multiples of this (seconds).
QUANTUM = 0.25
#: Measurements kept per model for its speed estimate.
SPEED_WINDOW = 20
#: Estimate before a model is measured: fixed seconds, and seconds per prompt character
#: (Piper, the slowest engine here: 0.5 s for 30 characters, 2.7 s for 290 on a busy 2-core machine).
FALLBACK_BASE = 0.5
FALLBACK_PER_CHAR = 0.01


@dataclass(frozen=True)
class Speed:
    """Generation time of one model as a line in the prompt's length: ``base + per_char * chars``."""

    base: float
    per_char: float

    def seconds(self, chars: int) -> float:
        return self.base + self.per_char * chars


FALLBACK_SPEED = Speed(FALLBACK_BASE, FALLBACK_PER_CHAR)


def fit_speed(samples: Iterable[tuple[int, float]]) -> Speed:
    """Least-squares line through (characters, seconds), with non-negative coefficients.

    One length only (or one sample): a line through the origin and their mean.
    """
    pairs = [(float(c), float(s)) for c, s in samples]
    if not pairs:
        raise ValueError("no samples to fit a speed to")
    n = len(pairs)
    mean_c = sum(c for c, _ in pairs) / n
    mean_s = sum(s for _, s in pairs) / n
    spread = sum((c - mean_c) ** 2 for c, _ in pairs)
    if spread == 0:
        return Speed(0.0, mean_s / mean_c) if mean_c > 0 else Speed(mean_s, 0.0)
    slope = sum((c - mean_c) * (s - mean_s) for c, s in pairs) / spread
    slope = max(slope, 0.0)
    base = mean_s - slope * mean_c
    if base < 0:  # the line would start below zero: refit through the origin
        return Speed(0.0, sum(c * s for c, s in pairs) / sum(c * c for c, _ in pairs))
    return Speed(base, slope)


def release_at(elapsed: float, floor: float, quantum: float = QUANTUM) -> float:
    """When to answer (seconds after the request began): the floor, or the next step past it."""
    if elapsed <= floor:
        return floor
    return math.ceil(elapsed / quantum) * quantum


class Pacer:
    """Measured model speeds, warm arenas, and the hold that follows from them (module docstring).

    ``clock`` and ``sleep`` are injected for tests. Thread-safe.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 margin: float = SLOW_MARGIN, quantum: float = QUANTUM):  # fmt: skip
        if margin < 1 or quantum <= 0:
            raise ValueError(f"margin must be >= 1 and quantum > 0, got {margin}, {quantum}")
        self.clock = clock
        self._sleep = sleep
        self.margin = margin
        self.quantum = quantum
        self._samples: dict[tuple[str, str], deque] = defaultdict(
            lambda: deque(maxlen=SPEED_WINDOW)
        )
        self._warm: set[str] = set()
        self._lock = threading.Lock()

    def record(self, arena_id: str, model_id: str, chars: int, seconds: float) -> None:
        """One timed generation of ``chars`` characters (the warm-up's calibration)."""
        with self._lock:
            self._samples[(arena_id, model_id)].append((chars, seconds))

    def speed(self, arena_id: str, model_id: str) -> Speed:
        """The model's fitted speed, or :data:`FALLBACK_SPEED` before it was measured."""
        with self._lock:
            samples = list(self._samples.get((arena_id, model_id), ()))
        return fit_speed(samples) if samples else FALLBACK_SPEED

    def mark_warm(self, arena_id: str) -> None:
        """Every set prompt of the arena is pre-generated: its set-prompt battles need no hold."""
        with self._lock:
            self._warm.add(arena_id)

    def is_warm(self, arena_id: str) -> bool:
        with self._lock:
            return arena_id in self._warm

    def floor(self, arena_id: str, candidates: Iterable[str], chars: int) -> float:
        """Seconds a battle on a ``chars``-long prompt is held at least, from the drawable models."""
        slowest = max((self.speed(arena_id, m).seconds(chars) for m in candidates), default=0.0)
        return math.ceil(slowest * self.margin / self.quantum) * self.quantum

    def due(self, started: float, arena_id: str, candidates: Iterable[str], chars: int, *,
            typed: bool) -> float:  # fmt: skip
        """When (on ``clock``) the battle that began at ``started`` may be answered.

        Set-prompt battles of a warm arena are due at once (``started``). The caller
        waits without holding a thread (the app awaits it), so a flood of typed prompts
        cannot tie up the workers that votes need.
        """
        if not typed and self.is_warm(arena_id):
            return started
        elapsed = self.clock() - started
        return started + release_at(elapsed, self.floor(arena_id, candidates, chars), self.quantum)

    def hold(self, started: float, arena_id: str, candidates: Iterable[str], chars: int, *,
             typed: bool) -> float:  # fmt: skip
        """Sleep until :meth:`due`; returns the seconds slept (for callers that may block)."""
        wait = self.due(started, arena_id, candidates, chars, typed=typed) - self.clock()
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)
