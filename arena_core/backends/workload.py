"""What each engine of the process is doing for visitors' typed prompts: what a failure may be blamed on.

Why this exists: a failure counts toward a model's pause only when it says something
about the model. A thread cannot be killed, so an in-process engine that overruns
its timeout on a visitor's prompt keeps running, and keeps the lock it shares with
other voices (all Kokoro voices share one engine, all eSpeak NG voices one library,
Piper one phonemizer, Pico one worker process). A probe or a set-prompt generation
that then waits for that lock, or for a worker of the pool's executor, fails because
of what the visitor typed, not because the model is broken. Counted, it let one
visitor pause healthy models with typed prompts alone.

So the pool admits each generation here with a :class:`Ticket` and releases it when
its thread really returns (not when the pool stops waiting). The locks are module
globals and eSpeak NG voices speak in several arenas, so one :class:`Workload` serves
every pool of the process (:func:`engine_workload`), keyed by ``Backend.engine``: typed
work of one arena excuses, postpones and caps another's on the same engine. From that:

* :meth:`Workload.admit` refuses a typed generation when its engine already runs
  ``max_typed`` of them (running or queued), so one visitor cannot keep an engine busy.
* :meth:`Workload.contended` says whether a typed generation ran on the same engine
  at any time during a given generation: a timeout then is contention, not an outage.
* :meth:`Workload.when_idle` postpones a probe until no typed generation runs on its
  engine, so a probe's verdict is taken with the engine to itself.

A typed generation still running ``stuck_after`` seconds after it was admitted no
longer counts as "busy": the engine is stuck, and a stuck engine is an outage that
must pause its models (or one hanging prompt would shield them forever).

A model of its own (no shared engine lock) with :data:`MAX_OVERRUNS` generations still
running after the pool stopped waiting for them (:meth:`Workload.overran`) gets no other
thread until one returns: :meth:`Workload.submit` fails the generation at once instead.
Otherwise a model that hangs on every call (a hosted service that dribbles: httpx's
timeout is per read) took one more of the pool's workers at each retry after a pause,
for good, until none was left for any model and the arena had no battles until a
restart. A shared engine needs no cap: its other calls wait for its lock at most their
timeout, then return.

Time here is the pool's injected clock (for the stuck cut-off) and a sequence
number (for overlaps, so a clock that stands still in tests cannot blur them). No
method calls a backend or a callback while holding the lock.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena_core.backends.pool import PoolSettings

#: Excuses (see :meth:`Workload.excuse`): why a timeout is the load's, not the model's.
QUEUED, CONTENDED = "it waited for a free worker", "typed prompts kept its engine busy"
#: Timeouts after which a typed generation that has not returned no longer excuses
#: failures on its engine: the engine is stuck (an outage), not busy.
STUCK_TIMEOUTS = 20
#: Generations of a model of its own that may still run after the pool stopped waiting
#: for them; beyond, its generations fail at once (each held a pool worker for good).
#: Two, not one: a call that was just let go has not returned yet when the next starts.
MAX_OVERRUNS = 2


class Ticket:
    """One admitted generation: its engine, whether its prompt was typed, when it ran.

    ``ran_at`` (real monotonic seconds) and ``running`` are set by :meth:`run` in the
    worker thread, when the generation actually starts: a probe's timeout counts from
    there, not from submission, so time queued behind others is not the model's.
    ``excuse`` says why a failure was not counted (see :meth:`Workload.excuse`).
    """

    def __init__(self, engine: str, trusted: bool, seq: int, admitted: float):
        self.engine, self.trusted, self.seq, self.admitted = engine, trusted, seq, admitted
        self.submitted_at = time.monotonic()
        self.running = threading.Event()
        self.ran_at: float | None = None
        self.excuse = ""
        #: The generation returned (or was cancelled, or refused): set under the workload's lock.
        self.finished = False

    def run(self, function: Callable, *args):
        """Call ``function(*args)`` as this ticket's generation (in the worker thread)."""
        self.ran_at = time.monotonic()
        self.running.set()
        return function(*args)

    def ran_for(self) -> float:
        """Real seconds since the generation started (0 if it has not)."""
        return 0.0 if self.ran_at is None else time.monotonic() - self.ran_at

    def patience(self, limit: float, *, probe: bool) -> float:
        """Real seconds left to wait for the result, of ``limit`` in all.

        A battle's side waits at most ``limit`` from submission (in a pair, the second
        side has had the time spent waiting for the first). Nobody waits for a probe:
        its ``limit`` counts from when it starts running, after at most ``limit`` queued.
        """
        if probe and self.running.wait(limit):
            return max(limit - self.ran_for(), 0.0)
        return max(limit - (time.monotonic() - self.submitted_at), 0.0)


@dataclass
class _Engine:
    """One engine's typed work; only touched under :class:`Workload`'s lock."""

    #: Typed generations admitted and not yet returned: ticket seq -> admission time.
    typed: dict[int, float] = field(default_factory=dict)
    #: Sequence numbers of the last typed admission and the last typed return.
    typed_admitted_seq: int = -1
    typed_ended_seq: int = -1
    #: Callbacks waiting for the engine to have no typed generation (postponed probes).
    waiting: list[Callable[[], None]] = field(default_factory=list)
    #: Sequence numbers of generations still running after the pool stopped waiting.
    overrunning: set[int] = field(default_factory=set)


class Workload:
    """Typed generations in flight per engine (thread-safe).

    Parameters
    ----------
    max_typed : int
        Typed generations one engine may run or queue at once; more are refused.
    stuck_after : float
        Seconds (on ``clock``) after which a typed generation that has not returned
        no longer excuses failures: the engine is stuck, not busy.
    clock : callable
        The pool's clock.
    """

    def __init__(self, *, max_typed: int, stuck_after: float,
                 clock: Callable[[], float] = time.monotonic):  # fmt: skip
        if max_typed < 1 or stuck_after <= 0:
            raise ValueError(f"invalid workload limits: {max_typed}, {stuck_after}")
        self._max_typed, self._stuck_after, self._clock = max_typed, stuck_after, clock
        self._lock = threading.Lock()
        self._engines: dict[str, _Engine] = {}
        self._seq = itertools.count()

    def admit(self, engine: str, trusted: bool) -> Ticket | None:
        """A ticket for a generation on ``engine``, or None for a typed one refused
        because the engine already has ``max_typed`` typed generations."""
        now = self._clock()
        with self._lock:
            record = self._engines.setdefault(engine, _Engine())
            if not trusted and len(record.typed) >= self._max_typed:
                return None
            ticket = Ticket(engine, trusted, next(self._seq), now)
            if not trusted:
                record.typed[ticket.seq] = now
                record.typed_admitted_seq = ticket.seq
            return ticket

    def submit(self, executor: concurrent.futures.Executor, ticket: Ticket,
               function: Callable, *args, capped: bool = False) -> concurrent.futures.Future:  # fmt: skip
        """Run ``function(*args)`` on ``executor`` as the ticket's generation.

        The ticket is released when the function returns in its worker thread (however
        long after its timeout, and before anyone waiting for the result is woken), or
        when the generation is cancelled before it ran. ``capped`` (a model of its own):
        while :data:`MAX_OVERRUNS` generations on the engine overrun (:meth:`overran`),
        nothing is run: the future fails at once with :class:`TimeoutError` (the pool's
        timeout, counted by its usual rules).
        """
        with self._lock:
            refused = capped and len(self._engines[ticket.engine].overrunning) >= MAX_OVERRUNS
        if refused:
            self.release(ticket)
            future = concurrent.futures.Future()
            future.set_exception(TimeoutError("an earlier generation on its engine still runs"))
            return future

        def run():
            try:
                return ticket.run(function, *args)
            finally:
                self.release(ticket)

        try:
            future = executor.submit(run)
        except RuntimeError:  # the executor is shut down
            self.release(ticket)
            raise
        future.add_done_callback(lambda _: self.release(ticket))  # a no-op unless cancelled
        return future

    def release(self, ticket: Ticket) -> None:
        """The ticket's generation returned (or was cancelled before it ran); idempotent.

        Runs the callbacks that waited for the engine, when no typed generation is left.
        """
        with self._lock:
            record = self._engines[ticket.engine]
            ticket.finished = True
            record.overrunning.discard(ticket.seq)
            if ticket.trusted or record.typed.pop(ticket.seq, None) is None:
                return
            record.typed_ended_seq = next(self._seq)
        self.run_due()

    def overran(self, ticket: Ticket) -> None:
        """The pool stopped waiting for the ticket's running generation: it counts toward
        its engine's :data:`MAX_OVERRUNS` until it returns (see :meth:`submit`)."""
        with self._lock:
            if not ticket.finished:
                self._engines[ticket.engine].overrunning.add(ticket.seq)

    def contended(self, ticket: Ticket) -> bool:
        """Whether a typed generation ran on the ticket's engine while the ticket's did:
        one was running when it was admitted or is still running (unless stuck), or one
        was admitted or returned since."""
        now = self._clock()
        with self._lock:
            record = self._engines[ticket.engine]
            busy = any(seq != ticket.seq and not self._stuck(since, now)
                       for seq, since in record.typed.items())  # fmt: skip
            return busy or max(record.typed_admitted_seq, record.typed_ended_seq) > ticket.seq

    def excuse(self, ticket: Ticket, *, timed_out: bool, returned: bool, timeout: float) -> str:
        """Why a failure of a known-good prompt is not the model's fault, or "" if it is.

        Only a timeout can be the load's. It is when the pool stopped waiting before the
        generation had run its full ``timeout`` (queued behind others), or when a typed
        generation ran on its engine meanwhile (an overrunning one keeps the engine's
        lock, and the load is the visitor's doing). Any other failure counts.
        """
        if not timed_out:
            return ""
        if not returned and ticket.ran_for() < timeout:
            return QUEUED
        if self.contended(ticket):
            return CONTENDED
        return ""

    def when_idle(self, engine: str, callback: Callable[[], None]) -> bool:
        """True if ``engine`` runs no typed generation now (the caller goes ahead);
        else False, and ``callback`` is called once it runs none."""
        now = self._clock()
        with self._lock:
            record = self._engines.setdefault(engine, _Engine())
            if self._idle(record, now):
                return True
            record.waiting.append(callback)
            return False

    def run_due(self) -> None:
        """Call the callbacks of engines that have become idle (also when their typed work
        has become stuck, which no return announces: the pool calls this regularly)."""
        now = self._clock()
        due = []
        with self._lock:
            for record in self._engines.values():
                if record.waiting and self._idle(record, now):
                    due.extend(record.waiting)
                    record.waiting.clear()
        for callback in due:
            callback()

    def _idle(self, record: _Engine, now: float) -> bool:
        return all(self._stuck(since, now) for since in record.typed.values())

    def _stuck(self, since: float, now: float) -> bool:
        return now - since >= self._stuck_after


def engine_workload(settings: PoolSettings,
                    clock: Callable[[], float] = time.monotonic) -> Workload:  # fmt: skip
    """The workload every pool of a process shares, with the limits of ``settings``.

    One per process, because what it protects is: an engine's lock is a module global
    (eSpeak NG's library, Piper's phonemizer, Kokoro, Pico's worker), and eSpeak NG voices
    speak in several arenas. A typed prompt of one arena that overruns keeps the lock
    another arena's probe then waits for; that probe is postponed, and the cap of
    ``settings.max_typed_per_engine`` holds for the engine, only if both pools admit their
    generations here. Built where the pools are and passed to each (``ModelPool(workload=)``)
    rather than kept in a module global, so that tests, each with its own clock and
    limits, do not share one.
    """
    return Workload(max_typed=settings.max_typed_per_engine, clock=clock,
                    stuck_after=settings.timeout * STUCK_TIMEOUTS)  # fmt: skip
