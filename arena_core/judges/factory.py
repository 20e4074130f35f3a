"""From a registry judge to a working one: each kind's class, imported only when used.

The speech judges need optional packages (``pocketsphinx``, ``jiwer``) and the LLM
judge a hosted chat client; importing a kind only when a judge of it is built keeps
the CLI and the Space free of what their registry does not ask for.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

from arena_core.judges.base import Judge, JudgeSpec

#: Judge kind -> (module, class).
_CLASSES = {
    "intelligibility": ("arena_core.judges.speech", "IntelligibilityJudge"),
    "prosody": ("arena_core.judges.speech", "ProsodyJudge"),
    "llm": ("arena_core.judges.llm", "LLMJudge"),
}


def make_judge(spec: JudgeSpec, env: Mapping[str, str] = os.environ) -> Judge:
    """The judge ``spec`` describes; its kind's constructor checks the options.

    ``env`` is where an LLM judge reads its API token (the backends' convention).
    """
    module_name, class_name = _CLASSES[spec.kind]
    cls = getattr(importlib.import_module(module_name), class_name)
    if spec.kind == "llm":
        return cls(spec, env=env)
    return cls(spec)
