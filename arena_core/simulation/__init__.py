"""Seeded simulations with known truth: how the project proves its statistical claims.

A claim such as "the 95% interval covers the truth 95% of the time" or "the
sampler saves 40% of the votes" is checked on synthetic arenas whose true
ratings are known (:mod:`~arena_core.simulation.synthetic`), in the test suite
and by ``python -m arena_core simulate --scenario NAME``.

Each scenario is a module exposing:

* ``add_arguments(parser)``: its options (called for every scenario, so use
  names that do not clash: prefix a scenario-only option with its topic);
* ``run(args) -> dict``: the result, JSON-ready (numbers, lists, dicts);
* ``format_table(result) -> str``: the same result as a Markdown table.

Scenarios are imported only when run, so the CLI stays fast to start.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Scenario name -> module path. The first is the default of ``simulate``.
SCENARIOS: dict[str, str] = {
    "matchmaking": "arena_core.simulation.matchmaking",
    "calibration": "arena_core.simulation.calibration",
    "voters": "arena_core.simulation.voters",
    "judges": "arena_core.simulation.judges",
    "complementarity": "arena_core.simulation.complementarity",
}


def scenario(name: str) -> ModuleType:
    """The module of scenario ``name`` (KeyError for an unknown name)."""
    return importlib.import_module(SCENARIOS[name])
