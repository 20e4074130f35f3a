"""The registry's ``judges:`` section.

Example::

    judges:
      - id: judge/pocketsphinx-wer
        name: Intelligibility (PocketSphinx word error rate)
        kind: intelligibility
        arenas: [tts-en]
        options: {margin: 0.05}
      - id: judge/qwen-2.5-72b
        name: Qwen2.5 72B Instruct
        kind: llm
        family: qwen                    # self-preference is measured against models of this family
        arenas: [chat-en]
        options: {backend: {type: hf-inference, model: Qwen/Qwen2.5-72B-Instruct}}

A judge's options are checked by its kind when it is built
(:func:`arena_core.judges.factory.make_judge`); here only the common fields are.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from arena_core.judges.base import KINDS, JudgeSpec
from arena_core.registry.fields import Ctx, check_free_form, check_keys, check_unique, ident, text

_JUDGE_KEYS = {"id", "name", "kind", "arenas", "family", "options"}


def parse_judges(ctx: Ctx, raw: Any, arena_ids: list[str]) -> tuple[JudgeSpec, ...]:
    """Every judge of the registry; raises ``RegistryError`` at the first problem."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ctx.error("must be a list of judges", "judges")
    judges = tuple(_parse_judge(ctx, item, arena_ids) for item in raw)
    check_unique(ctx, [j.id for j in judges], "judge id in judges")
    return judges


def _parse_judge(ctx: Ctx, raw: Any, arena_ids: list[str]) -> JudgeSpec:
    if not isinstance(raw, Mapping):
        raise ctx.error("each judge must be a mapping", "judges")
    prefix = f"judges[{raw.get('id')}]." if isinstance(raw.get("id"), str) else "judges."
    check_keys(ctx, raw, _JUDGE_KEYS, prefix=prefix)
    kind = text(ctx, raw, "kind", prefix=prefix)
    if kind not in KINDS:
        raise ctx.error(
            f"unknown judge kind {kind!r}; use one of {', '.join(KINDS)}", prefix + "kind"
        )
    arenas = raw.get("arenas")
    if not isinstance(arenas, list) or not arenas or not all(isinstance(a, str) for a in arenas):
        raise ctx.error("must be a non-empty list of arena ids", prefix + "arenas")
    for arena in arenas:
        if arena not in arena_ids:
            raise ctx.error(f"no arena {arena!r} in the registry", prefix + "arenas")
    options = raw.get("options") or {}
    if not isinstance(options, Mapping):
        raise ctx.error("must be a mapping of the kind's settings", prefix + "options")
    check_free_form(ctx, options, prefix + "options")
    return JudgeSpec(
        id=ident(ctx, raw, "id", prefix=prefix),
        name=text(ctx, raw, "name", prefix=prefix),
        kind=kind,
        arenas=tuple(dict.fromkeys(arenas)),
        family=text(ctx, raw, "family", required=False, prefix=prefix),
        options=MappingProxyType(dict(options)),
    )
