"""Argparse types for the command line's numbers (the scenarios' options, ``leaderboard
--seed`` and ``--bootstrap``): a value no run can use is refused by name when the options
are parsed (``argument --mm-models: expected a whole number 2 or
more``), instead of a NaN table, an empty one, or a traceback from deep in the run."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole(minimum: int) -> Callable[[str], int]:
    """A whole number of at least ``minimum`` (models, votes, seeds, rounds)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(
                f"expected a whole number {minimum} or more, got {text!r}"
            )
        return value

    parse.__name__ = f"whole number >= {minimum}"  # argparse names the type in some messages
    return parse


def real(low: float = -math.inf, high: float = math.inf, *, above: bool = False,
         below: bool = False) -> Callable[[str], float]:  # fmt: skip
    """A finite number in ``[low, high]`` (``above``/``below``: the end itself excluded)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        inside = (value > low if above else value >= low) and (
            value < high if below else value <= high
        )
        if not (math.isfinite(value) and inside):
            raise argparse.ArgumentTypeError(
                f"expected a finite number in {_range(low, high, above, below)}, got {text!r}"
            )
        return value

    parse.__name__ = "number"
    return parse


def _range(low: float, high: float, above: bool, below: bool) -> str:
    left = "(" if above or low == -math.inf else "["
    right = ")" if below or high == math.inf else "]"
    return f"{left}{low:g}, {high:g}{right}".replace("inf", "∞")


#: Common kinds.
COUNT = whole(1)
MODELS = whole(2)
NON_NEGATIVE = real(0.0)
PROBABILITY = real(0.0, 1.0, below=True)
