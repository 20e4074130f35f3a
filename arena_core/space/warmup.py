"""Pre-generate the set prompts of the speech arenas at start-up, in the background.

A battle on a set prompt should cost the same whatever engines it draws, so
its outputs must already exist: the warm-up generates every (prompt, model)
pair of each audio arena through the pool (which stores it in the output
cache of the data folder, kept across restarts: a restart only regenerates
what is missing), and shapes it for delivery (:class:`Blinder`, which caches
the shaped clip too). Prompts are the outer loop, so while the warm-up runs,
whether a battle was cached depends on the prompt, not on the models.

A pair that fails (a timeout on a busy start) is tried once more after the
arena's other pairs. The arena is marked warm either way: a battle is served
unheld only when every model that could have been drawn on its prompt has its
clip (the service checks), so a pair still missing holds every battle on its
prompt, whatever the models, until a battle makes the clip.

It also measures each model's speed for the hold of typed prompts
(:class:`Pacer`): after the first prompt has loaded every engine, each model
speaks its shortest and its longest set prompt with a random number appended,
so the text is never cached and the time is a real generation's.

Only audio arenas are warmed, and in them only the engines that run on this machine:
a hosted voice's generations are paid calls to its service (about 150 per voice on each
start with an empty cache), so it only has its speed measured (two calls). Its clips are
made by the battles that draw it, and until one is, every battle on that prompt is held
(the service checks every drawable model's clip), so an uncached hosted voice slows a set
prompt's battles but tells no one which voices are in them. One generation runs at a
time, leaving the other core to visitors.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from arena_core.backends import BackendError, ModelPool
from arena_core.registry import Arena, Prompt, Registry
from arena_core.space.blinding import Blinder
from arena_core.space.pacing import Pacer

log = logging.getLogger(__name__)

#: Range of the random number appended to calibration prompts, so they are never cached.
NONCE_RANGE = (100, 1000)


@dataclass
class WarmupProgress:
    """Per arena: generations done, failed, and the total planned; ``done`` once all arenas are warm."""

    done_count: dict[str, int]
    failed: dict[str, int]
    total: dict[str, int]
    done: bool = False


class Warmup:
    """The start-up pass over the audio arenas' set prompts (module docstring).

    ``calibrate=False`` skips the speed measurement (tests that use set prompts
    only); ``clock`` and ``rng`` are injected for tests.
    """

    def __init__(self, registry: Registry, pools: Mapping[str, ModelPool], blinder: Blinder,
                 pacer: Pacer, *, calibrate: bool = True,
                 clock: Callable[[], float] = time.perf_counter,
                 rng: np.random.Generator | None = None):  # fmt: skip
        self.arenas = [a for a in registry.arenas if a.modality == "audio"]
        self.pools = pools
        self.blinder = blinder
        self.pacer = pacer
        self.calibrate = calibrate
        self._clock = clock
        self._rng = rng if rng is not None else np.random.default_rng()
        self._stop = threading.Event()
        planned = {
            a.id: len(a.prompts) * sum(not pools[a.id].remote(m.id) for m in a.models)
            for a in self.arenas
        }
        self.progress = WarmupProgress({}, {}, planned)

    def start(self) -> threading.Thread:
        """Run :meth:`run` in a daemon thread."""
        thread = threading.Thread(target=self.run, name="warmup", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """Ask a running warm-up to stop after its current generation."""
        self._stop.set()

    def run(self) -> WarmupProgress:
        """Warm every audio arena in turn; an arena is marked warm once all its prompts were tried."""
        start = self._clock()
        for arena in self.arenas:
            if self._stop.is_set():
                break
            self._warm_arena(arena, self.pools[arena.id])
        self.progress.done = not self._stop.is_set()
        log.info("warm-up %s in %.1f s: %s generated, %s failed",
                 "done" if self.progress.done else "stopped", self._clock() - start,
                 self.progress.done_count, self.progress.failed)  # fmt: skip
        return self.progress

    def _warm_arena(self, arena: Arena, pool: ModelPool) -> None:
        models = [m for m, s in pool.status().items() if s.available]
        self.progress.done_count[arena.id] = self.progress.failed[arena.id] = 0
        missed = []
        for k, prompt in enumerate(arena.prompts):
            for model_id in models:
                if self._stop.is_set():
                    return
                served = pool.serves(model_id, prompt.category) and not pool.remote(model_id)
                if served and not self._prepare(arena, pool, model_id, prompt):
                    missed.append((model_id, prompt))
            if k == 0 and self.calibrate:
                self._calibrate(arena, pool, models)
        for model_id, prompt in missed:  # once more, now that the start-up rush is over
            if self._stop.is_set():
                return
            self.progress.failed[arena.id] -= 1  # counted again if it fails again
            self._prepare(arena, pool, model_id, prompt)
        self.pacer.mark_warm(arena.id)

    def _prepare(self, arena: Arena, pool: ModelPool, model_id: str, prompt: Prompt) -> bool:
        """Generate and shape one pair; whether it worked (a failure is counted and logged)."""
        try:
            output = pool.generate(model_id, prompt.text, prompt.category)
            self.blinder.prepare(output, pool.cache_key(model_id, prompt.text, prompt.category))
        except BackendError as exc:
            self.progress.failed[arena.id] += 1
            log.info("warm-up: %s", exc)
        except RuntimeError:  # the pool was closed under us: the app is shutting down
            self._stop.set()
        except Exception:  # one pair that cannot be prepared must not leave the rest cold
            self.progress.failed[arena.id] += 1
            log.warning("warm-up: could not prepare %s on %r", model_id, prompt.id, exc_info=True)
        else:
            self.progress.done_count[arena.id] += 1
            return True
        return False

    def _calibrate(self, arena: Arena, pool: ModelPool, models: list[str]) -> None:
        """Time each model on its shortest and longest prompt, made uncacheable."""
        for model_id in models:
            spoken = [p for p in arena.prompts if pool.serves(model_id, p.category)]
            if not spoken:
                continue
            ends = (min(spoken, key=lambda p: len(p.text)), max(spoken, key=lambda p: len(p.text)))
            for prompt in dict.fromkeys(ends):
                text = f"{prompt.text} {int(self._rng.integers(*NONCE_RANGE))}"
                began = self._clock()
                try:
                    pool.generate(model_id, text, prompt.category)
                except (BackendError, RuntimeError) as exc:
                    log.info("warm-up: could not time %s: %s", model_id, exc)
                    continue
                self.pacer.record(arena.id, model_id, len(text), self._clock() - began)
        log.info("arena %s: model speeds measured", arena.id)
