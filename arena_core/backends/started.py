"""A generation the pool has started, and a battle side's result: kept apart from
:mod:`~arena_core.backends.pool` so the pool reads as its rules (cache, timeout, outages)."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass

from arena_core.backends.base import BackendError
from arena_core.backends.output import Output
from arena_core.backends.workload import Ticket


def error_or(function, *args):
    """``function(*args)``, or the :class:`BackendError` it raised (a battle side's result)."""
    try:
        return function(*args)
    except BackendError as exc:
        return exc


@dataclass(frozen=True)
class Started:
    """A generation under way (``future``) or already served from the cache (``output``)."""

    model_id: str
    key: str | None
    output: Output | None = None
    future: concurrent.futures.Future | None = None
    #: Injected-clock time of submission, for the latency record.
    began: float = 0.0
    #: A known-good prompt (the arena's own, or a probe): failures count toward a pause.
    trusted: bool = True
    #: The prompt, to judge whether the output's length is plausible.
    text: str = ""
    #: Its admission in the pool's workload (what ran alongside, when it started running).
    ticket: Ticket | None = None
    #: A probe: nobody waits for it, so its timeout counts from when it starts running.
    probe: bool = False
