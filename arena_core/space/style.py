"""Each side's style as the listener got it, recorded with the vote.

The style-controlled board (``--style-control``) separates what voters prefer from
how long, how fast and how loud a clip was, as LMArena's style control does for
answer length. It needs those covariates on every vote row, measured on the clips
as delivered (after blinding: the loudness a listener heard, the speech span
without the padding), plus the engine's own sample rate (its bandwidth survives
the resampling to one delivery rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from arena_core.analysis.speech_style import speech_style
from arena_core.backends.output import Output

#: Decimals kept per field: far below what a listener hears, and rows stay short.
_DECIMALS = {"duration_s": 3, "speech_rate": 3, "lufs": 2}


def battle_style(outputs: Sequence[Output], prompt: str,
                 native_rates: Sequence[int | None]) -> dict:  # fmt: skip
    """The vote fields ``model_a_duration_s`` ... ``model_b_sample_rate`` of a battle; empty
    unless both outputs are audio."""
    if len(outputs) != 2 or any(o.modality != "audio" for o in outputs):
        return {}
    fields: dict = {}
    for side, output, rate in zip("ab", outputs, native_rates, strict=True):
        style = speech_style(output, prompt)
        for name, digits in _DECIMALS.items():
            value = getattr(style, name)  # a silent clip's loudness is -inf: unknown, not a value
            known = value is not None and math.isfinite(value)
            fields[f"model_{side}_{name}"] = round(float(value), digits) if known else None
        fields[f"model_{side}_sample_rate"] = rate
    return fields
