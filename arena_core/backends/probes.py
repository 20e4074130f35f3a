"""Probes of a pool's models: one of the arena's own prompts, asked in the background.

A failure on a prompt a visitor typed does not count against a model: it starts a
probe instead, whose result counts. A remote model is checked with one before its
first battle, and again when the pause of a failed check ends. The rules (one probe
per model at a time, at most one per ``probe_interval``, who awaits a check) are
:class:`~arena_core.backends.health.ModelHealth`'s; the generation (no cache, run even
while paused, its outcome recorded) is the pool's. :class:`Probes` is what is left
between them: which prompt to ask and when, on the pool's probe thread. Kept apart
from :class:`~arena_core.backends.pool.ModelPool`'s generation path because nobody
waits for a probe: it is started by a failure or by a pause's end, never by a battle.

A probe's verdict must be the model's, not the load a visitor made: a probe waits
until no typed generation runs on its model's engine (``wait_turn``), and one that
failed only because typed work ran alongside after all (:class:`Postponed`) waits
for its turn again, its claim kept, instead of counting.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping

from arena_core.backends.base import Backend, BackendError
from arena_core.backends.health import ModelHealth
from arena_core.backends.output import Output
from arena_core.registry import Arena


class Postponed(Exception):  # noqa: N818 - a verdict put off, not an error
    """A probe that met a visitor's typed work on its engine: not counted, asked again later."""


class Probes:
    """Starts the probes and start-up checks of one pool's models.

    Parameters
    ----------
    arena : Arena
        Its prompts are the ones the probes ask.
    backends : mapping of model id to Backend
        The pool's (whether a model is remote and can run here).
    health : ModelHealth
        The pool's records: which probes may start, which models await a check.
    executor : concurrent.futures.Executor
        The pool's probe thread: a probe waiting inside the generation executor could
        starve it.
    serves : callable (model id, category) -> bool
        Whether a model speaks a prompt of that category (``ModelPool.serves``).
    generate : callable (model id, prompt) -> Output
        One probe's generation; raises :class:`BackendError`, already counted, or
        :class:`Postponed`, not counted.
    wait_turn : callable (model id, callback) -> bool
        Whether the model's engine is free of typed work now; if not, the callback is
        called once it is (``Workload.when_idle``). Default: always free.
    """

    def __init__(self, arena: Arena, backends: Mapping[str, Backend], health: ModelHealth,
                 executor: concurrent.futures.Executor, *, serves: Callable[[str, str | None], bool],
                 generate: Callable[[str, object], Output],
                 wait_turn: Callable[[str, Callable[[], None]], bool] = lambda m, c: True):  # fmt: skip
        self.arena, self._backends, self.health = arena, backends, health
        self._executor, self._serves, self._generate = executor, serves, generate
        self._wait_turn = wait_turn

    def probe(self, model_id: str, prompt=None) -> concurrent.futures.Future | None:
        """Ask the model for one of the arena's prompts in the background; its result counts.

        Returns the probe's future, or None when a probe runs already, one ran
        less than ``settings.probe_interval`` ago, or the arena has no prompt the
        model speaks.
        """
        prompt = prompt or self._probe_prompt(model_id)
        if prompt is None or not self.health.claim_probe(model_id):
            return None

        def run() -> None:
            if not self._wait_turn(model_id, submit):
                return  # the engine runs typed work: ``submit`` is called when it is done
            postponed = False
            try:
                self._generate(model_id, prompt)
            except Postponed:
                postponed = True  # the claim is kept until the probe has run on an idle engine
            except BackendError:
                pass  # counted by the pool's generation
            finally:
                if not postponed:
                    self.health.release_probe(model_id)
            if postponed and self._wait_turn(model_id, submit):
                submit()

        def submit() -> concurrent.futures.Future | None:
            try:  # the probe waits on its own thread: a wait inside the executor could starve it
                return self._executor.submit(run)
            except RuntimeError:  # the pool is closing
                self.health.release_probe(model_id)
                return None

        return submit()

    def _probe_prompt(self, model_id: str):
        """The first of the arena's prompts the model speaks, or None."""
        for prompt in self.arena.prompts:
            if self._serves(model_id, prompt.category):
                return prompt
        return None

    def probe_remote(self) -> dict[str, concurrent.futures.Future]:
        """Check every available remote model once, in the background, before it is paired.

        Each is asked for the arena's shortest prompt it speaks (a cheap call);
        until that succeeds it is held back (``ModelPool``, "Remote models").
        Returns the probes' futures by model id (for tests and logs).
        """
        futures = {}
        for model_id, backend in self._backends.items():
            if not backend.remote or not backend.availability().ok:
                continue
            prompt = self._short_prompt(model_id)
            if prompt is None:
                continue
            self.health.mark_unverified(model_id)
            future = self.probe(model_id, prompt)
            if future is not None:
                futures[model_id] = future
        return futures

    def recheck_due(self) -> None:
        """Start the probe of each unverified model whose pause has ended (rate-limited by probe)."""
        for model_id in self.health.due_checks():
            self.probe(model_id, self._short_prompt(model_id))

    def _short_prompt(self, model_id: str):
        """The arena's shortest prompt the model speaks (the cheapest check), or None."""
        spoken = [p for p in self.arena.prompts if self._serves(model_id, p.category)]
        return min(spoken, key=lambda p: len(p.text)) if spoken else None
