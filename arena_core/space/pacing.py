"""How long a battle's answer is held, so its timing does not tell which engines ran.

Gradio 6 reports each event's processing time to the client (``duration`` and
``average_duration`` in the ``process_completed`` message, and the queue's
``rank_eta``/``eta`` estimates), and a client can time the request itself, so
hiding the field would not help: the time has to stop depending on the engines.
Both sides generate in parallel, so a battle takes as long as its slower side:
Piper needs 0.5-1.5 s for a sentence, eSpeak NG a few milliseconds.

* **Set prompts served from the warm caches** are not held: once an arena is warm,
  a set-prompt battle whose two clips *and the clips of every model that could have
  been drawn on that prompt* were read from the shaped cache takes a few
  milliseconds, whatever the engines. Whether a battle is held then depends on the
  prompt and the cache, never on the pair (a clip evicted from the bounded caches,
  or missed by the warm-up, holds every battle on its prompt until it is made again).
* **Everything else** (typed prompts, and any set-prompt battle generated now) is
  held until a floor that depends only on the prompt's length and on which models
  *could* have been drawn, rounded up to :data:`QUANTUM`. A battle that overruns
  the floor is released at the next multiple of :data:`QUANTUM`.

**Why the response time tells nothing (the adversary's view).** Let ``S`` be a
battle's server time (request to answer, everything included: generation,
shaping, the battle record; the hold is computed last) and ``F`` its floor. The
answer leaves at ``F`` if ``S <= F``, else at the next step past ``S``. ``F`` is
computed from the prompt's length, the drawable models and battles that finished
*before* this one, so given that history it is the same whichever pair is drawn;
the response time differs between two pairs only on the event ``S > F``. Hence
for any two pairs the total variation distance between their response-time
distributions, which bounds the advantage of any test an adversary can run on
the time, is at most ``P(S > F)`` for the slower pair. The floor keeps that
probability small under any load: it is :data:`SLOW_MARGIN` times the larger of

* the slowest drawable model's calibrated time for this length (the warm-up's
  timings, :meth:`Pacer.record`), and
* the :data:`LIVE_RANK`-th slowest of the last :data:`LIVE_WINDOW` live battles of any
  drawable model (:meth:`Pacer.observe`), scaled to this length along that model's
  calibrated line.

Under steady load battle times are exchangeable, so a new battle exceeds the
``k``-th largest of ``n`` earlier ones with probability at most ``k/(n+1)`` (6% for
the third of 50), and exceeding 1.5 times it is far rarer. The third, not the
slowest: one outlier (an engine's first load, a pause of the whole machine) would
otherwise hold every battle of the arena at 1.5 times it for the next 50 battles of
that model; it takes three slow battles to raise the floor. When load rises, the
third battle that comes close raises the floor for every later one; when it falls,
the floor comes down as slow battles leave the window (it lags safe both ways). What remains: the floor itself moves with the history, so a client
that opens battles back to back sees it rise after a battle that set a new
maximum; that is a rare event in steady load, and says that some recent battle
of the arena (anyone's) was slow, not which models it had.

The price: a typed prompt answered by two fast engines waits as long as the
slowest engine would have taken, on this machine's recent load (about 1-2 s for a
sentence here when idle). The app awaits the hold without holding a thread.
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
#: Live battles kept per model for the floor's load estimate: the floor covers the
#: :data:`LIVE_RANK`-th slowest of them, so a higher number means fewer overruns and a slower
#: fall back after a busy spell.
LIVE_WINDOW = 50
#: Which of the window's slowest battles the floor covers: one outlier never raises it.
LIVE_RANK = 3
#: Shortest calibrated time a live battle is scaled by (seconds): guards the division.
MIN_SCALE = 1e-3
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


def scaled_rank(speed: Speed, samples: Iterable[tuple[int, float]], chars: int,
                rank: int = LIVE_RANK) -> float:  # fmt: skip
    """The ``rank``-th slowest of ``samples`` (characters, seconds), each scaled to ``chars``
    characters along ``speed``'s line (a battle of twice the calibrated time counts as twice
    the time at any length); 0 with fewer than ``rank`` samples."""
    target = speed.seconds(chars)
    scaled = sorted((s * target / max(speed.seconds(c), MIN_SCALE) for c, s in samples),
                    reverse=True)  # fmt: skip
    return scaled[rank - 1] if len(scaled) >= rank else 0.0


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
        self._live: dict[tuple[str, str], deque] = defaultdict(lambda: deque(maxlen=LIVE_WINDOW))
        self._warm: set[str] = set()
        self._lock = threading.Lock()

    def record(self, arena_id: str, model_id: str, chars: int, seconds: float) -> None:
        """One timed generation of ``chars`` characters (the warm-up's calibration)."""
        with self._lock:
            self._samples[(arena_id, model_id)].append((chars, seconds))

    def observe(self, arena_id: str, model_ids: Iterable[str], chars: int, seconds: float) -> None:
        """A live battle's whole server time, counted for each of its models (the floor's
        load estimate, module docstring). Call it after the battle's own hold was computed:
        a battle's time may move only later battles' floors."""
        with self._lock:
            for model_id in model_ids:
                self._live[(arena_id, model_id)].append((chars, seconds))

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

    def estimate(self, arena_id: str, model_id: str, chars: int) -> float:
        """Seconds a battle with this model may take on ``chars`` characters now: its
        calibrated time, or its :data:`LIVE_RANK`-th slowest recent live battle scaled to that
        length if longer."""
        speed = self.speed(arena_id, model_id)
        with self._lock:
            live = list(self._live.get((arena_id, model_id), ()))
        return max(speed.seconds(chars), scaled_rank(speed, live, chars))

    def floor(self, arena_id: str, candidates: Iterable[str], chars: int) -> float:
        """Seconds a battle on a ``chars``-long prompt is held at least, from the drawable models."""
        slowest = max((self.estimate(arena_id, m, chars) for m in candidates), default=0.0)
        return math.ceil(slowest * self.margin / self.quantum) * self.quantum

    def due(self, started: float, arena_id: str, candidates: Iterable[str], chars: int, *,
            typed: bool) -> float:  # fmt: skip
        """When (on ``clock``) the battle that began at ``started`` may be answered.

        ``typed`` False only for a battle served wholly from the warm caches (module
        docstring): in a warm arena it is due at once (``started``). Any other battle,
        typed or generated now, is due at its floor or the next step past it. Call it as
        the battle's last step, so the whole server time is quantised. The caller waits
        without holding a thread (the app awaits it), so a flood of typed prompts cannot
        tie up the workers that votes need.
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
