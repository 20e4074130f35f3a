"""The registry: which arenas exist, which models fight in them, on which prompts.

``registry.yaml`` is the one place a model author edits to enter a model, so the
loader is strict: every key is checked, unknown keys are refused (a typo such as
``param_m`` would otherwise silently drop a field), and the first problem is
reported as one :class:`RegistryError` naming the file, arena, model and field.
Everything loads into frozen dataclasses so no part of the app can change the
registry behind another's back.

Example::

    arenas:
      - id: tts-en
        title: English text-to-speech
        modality: audio
        prior_mapping: {benchmark: "TTS quality index", center: 82, points_per_unit: 8}
                                             # priors: see arena_core.registry.priors
        prompts: prompts/tts_en.yaml        # or an inline list of {id, text, category}
        never_paired: [[espeak-ng/en-us, espeak-ng/en-us+f3]]   # groups that never meet
        models:
          - id: espeak-ng/en-us
            name: eSpeak NG (en-us)
            backend: {type: espeak, voice: en-us}
            weight: 2                        # matchmaking: twice the usual share of battles
            family: espeak                   # lineage, for judges' self-preference
            # prior: {value, source, accessed}: a published figure only, see arena_core.registry.priors
    judges: [...]                            # automatic judges: see arena_core.judges.spec
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from arena_core.judges.base import JudgeSpec
from arena_core.judges.spec import parse_judges
from arena_core.ratings.scale import ANCHOR
from arena_core.registry.fields import (
    Ctx,
    RegistryError,
    check_free_form,
    check_keys,
    check_unique,
    http_url,
    ident,
    number,
    text,
)
from arena_core.registry.priors import Prior, PriorMapping, Problem, read_mapping, read_prior
from arena_core.yamlfile import load_strict_yaml

#: The kinds of output an arena compares.
MODALITIES = ("audio", "text", "image")

_ARENA_KEYS = {
    "id", "title", "modality", "description", "prompts", "models", "prior_mapping", "never_paired",
}  # fmt: skip
_MODEL_KEYS = {
    "id", "name", "params", "params_m", "prior", "backend",
    "license", "url", "description", "weight", "family",
}  # fmt: skip
#: Largest matchmaking weight: beyond it one model would crowd out every other.
MAX_WEIGHT = 100.0
_PROMPT_KEYS = {"id", "text", "category"}


@dataclass(frozen=True)
class Prompt:
    """One prompt of an arena's prompt set; ``category`` is e.g. a language code."""

    id: str
    text: str
    category: str | None = None


@dataclass(frozen=True)
class BackendSpec:
    """How to reach a model: ``type`` picks the backend, ``options`` are its settings."""

    type: str
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Model:
    """A model entered in one arena."""

    id: str
    name: str
    backend: BackendSpec
    params: str | None = None
    params_m: float | None = None
    prior: Prior | None = None
    license: str | None = None
    url: str | None = None
    description: str | None = None
    #: Relative share of battles the matchmaker gives the model (1 = the usual share).
    weight: float = 1.0
    #: The model's maker or lineage (e.g. "qwen"): a judge of the same family may favour
    #: it, and the judges' analysis measures by how much.
    family: str | None = None

    @property
    def prior_rating(self) -> float:
        """Where ratings start: the mapped benchmark figure, else the anchor."""
        return self.prior.rating if self.prior else ANCHOR


@dataclass(frozen=True)
class Arena:
    """An arena: one modality, one prompt set, the models compared on it."""

    id: str
    title: str
    modality: str
    models: tuple[Model, ...]
    prompts: tuple[Prompt, ...]
    prior_mapping: PriorMapping | None = None
    description: str | None = None
    #: The prompt file, when ``prompts:`` names one (the Hub sync publishes it).
    prompt_file: Path | None = None
    #: Groups of model ids whose members are never paired (e.g. two versions of one model).
    never_paired: tuple[tuple[str, ...], ...] = ()

    def model(self, model_id: str) -> Model:
        for m in self.models:
            if m.id == model_id:
                return m
        raise KeyError(f"arena {self.id!r} has no model {model_id!r}")

    @property
    def categories(self) -> tuple[str, ...]:
        """The prompt categories in first-seen order (the per-category boards)."""
        return tuple(dict.fromkeys(p.category for p in self.prompts if p.category))


@dataclass(frozen=True)
class Registry:
    arenas: tuple[Arena, ...]
    path: Path | None = None
    #: Automatic judges (``arena_core.judges``), each voting in some arenas.
    judges: tuple[JudgeSpec, ...] = ()

    def judge(self, judge_id: str) -> JudgeSpec:
        for j in self.judges:
            if j.id == judge_id:
                return j
        known = ", ".join(j.id for j in self.judges) or "none"
        raise KeyError(f"no judge {judge_id!r} in the registry (known: {known})")

    def arena(self, arena_id: str) -> Arena:
        for a in self.arenas:
            if a.id == arena_id:
                return a
        known = ", ".join(a.id for a in self.arenas)
        raise KeyError(f"no arena {arena_id!r} in the registry (known: {known})")


def load_registry(path: str | Path) -> Registry:
    """Read and validate a registry file; raises :class:`RegistryError`."""
    path = Path(path)
    return parse_registry(load_document(path), file=path, base_dir=path.parent)


def load_document(path: Path) -> Any:
    """A registry file's YAML document, not yet validated; raises :class:`RegistryError`."""
    return _load_yaml(path, file=path)


def parse_registry(
    data: Any, *, file: Path | None = None, base_dir: Path | None = None
) -> Registry:
    """Validate an already-parsed registry document (see the module docstring)."""
    ctx = Ctx(file=file, base_dir=base_dir or Path("."))
    if not isinstance(data, Mapping) or set(data) - {"arenas", "judges"}:
        raise ctx.error("the document must be a mapping with the keys 'arenas' and 'judges'")
    raw_arenas = data.get("arenas")
    if not isinstance(raw_arenas, list) or not raw_arenas:
        raise ctx.error("must be a non-empty list", field="arenas")
    arenas = tuple(_parse_arena(ctx, raw) for raw in raw_arenas)
    check_unique(ctx, [a.id for a in arenas], "arena id")
    judges = parse_judges(ctx, data.get("judges"), [a.id for a in arenas])
    return Registry(arenas=arenas, path=file, judges=judges)


def _parse_arena(ctx: Ctx, raw: Any) -> Arena:
    if not isinstance(raw, Mapping):
        raise ctx.error("each arena must be a mapping")
    ctx = ctx.at(arena=raw.get("id") if isinstance(raw.get("id"), str) else None)
    check_keys(ctx, raw, _ARENA_KEYS)
    arena_id = ident(ctx, raw, "id")
    modality = text(ctx, raw, "modality")
    if modality not in MODALITIES:
        raise ctx.error(
            f"unknown modality {modality!r}; use one of {', '.join(MODALITIES)}", "modality"
        )
    mapping = _parse_mapping(ctx, raw.get("prior_mapping"))
    raw_models = raw.get("models")
    if not isinstance(raw_models, list) or not raw_models:
        raise ctx.error("must be a non-empty list of models", "models")
    models = tuple(_parse_model(ctx, m, mapping) for m in raw_models)
    check_unique(ctx, [m.id for m in models], "model id")
    _check_names(ctx, models)
    prompts = _parse_prompts(ctx, raw.get("prompts"))
    never = _parse_never_paired(ctx, raw.get("never_paired"), [m.id for m in models])
    return Arena(
        id=arena_id,
        title=text(ctx, raw, "title"),
        modality=modality,
        models=models,
        prompts=prompts,
        prior_mapping=mapping,
        description=text(ctx, raw, "description", required=False),
        prompt_file=ctx.base_dir / raw["prompts"] if isinstance(raw.get("prompts"), str) else None,
        never_paired=never,
    )


def _check_names(ctx: Ctx, models: tuple[Model, ...]) -> None:
    """Refuse a display name two models of the arena share (spacing aside, as a page shows
    it): the board, the Model view's picker and the CLI's table show names only, so an
    entry copied with its id changed but not its name gave two rows nobody could tell apart."""
    seen: dict[str, str] = {}
    for m in models:
        first = seen.setdefault(" ".join(m.name.split()), m.id)
        if first != m.id:
            raise ctx.error(f"models {first!r} and {m.id!r} have one display name {m.name!r}: "
                            "the board shows names only; give each its own", "name")  # fmt: skip


def _parse_never_paired(ctx: Ctx, raw: Any, model_ids: list[str]) -> tuple[tuple[str, ...], ...]:
    """Groups of the arena's models that must never meet; some pair must still be possible."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ctx.error("must be a list of groups, each a list of model ids", "never_paired")
    groups = []
    for k, group in enumerate(raw):
        where = f"never_paired[{k}]"
        if not isinstance(group, list) or len(group) < 2 or len(set(map(str, group))) < len(group):
            raise ctx.error("must be a list of at least two different model ids", where)
        for model_id in group:
            if model_id not in model_ids:
                raise ctx.error(f"{model_id!r} is not a model of this arena", where)
        groups.append(tuple(group))
    apart = {frozenset((a, b)) for g in groups for a in g for b in g if a != b}
    if len(apart) == len(model_ids) * (len(model_ids) - 1) // 2:
        raise ctx.error("leaves no pair of models that may meet", "never_paired")
    return tuple(groups)


def _parse_mapping(ctx: Ctx, raw: Any) -> PriorMapping | None:
    mapping, problems = read_mapping(ctx, raw)
    _raise_first(ctx, problems)
    return mapping


def _parse_model(ctx: Ctx, raw: Any, mapping: PriorMapping | None) -> Model:
    if not isinstance(raw, Mapping):
        raise ctx.error("each model must be a mapping", "models")
    ctx = ctx.at(model=raw.get("id") if isinstance(raw.get("id"), str) else None)
    check_keys(ctx, raw, _MODEL_KEYS)
    params_m = number(ctx, raw, "params_m", required=False)
    if params_m is not None and not 0 < params_m < math.inf:
        raise ctx.error("must be a positive, finite number of millions", "params_m")
    url = text(ctx, raw, "url", required=False)
    if url is not None and not http_url(url):
        raise ctx.error(f"{url!r} is not an http(s) URL with a host", "url")
    weight = number(ctx, raw, "weight", required=False)
    if weight is not None and not 0 < weight <= MAX_WEIGHT:
        raise ctx.error(f"must be a number above 0 and at most {MAX_WEIGHT:g}", "weight")
    return Model(
        id=ident(ctx, raw, "id"),
        name=text(ctx, raw, "name"),
        backend=_parse_backend(ctx, raw.get("backend")),
        params=text(ctx, raw, "params", required=False),
        params_m=params_m,
        prior=_parse_prior(ctx, raw.get("prior"), mapping),
        license=text(ctx, raw, "license", required=False),
        url=url,
        description=text(ctx, raw, "description", required=False),
        weight=1.0 if weight is None else weight,
        family=text(ctx, raw, "family", required=False),
    )


def _parse_prior(ctx: Ctx, raw: Any, mapping: PriorMapping | None) -> Prior | None:
    prior, problems = read_prior(ctx, raw, mapping)
    _raise_first(ctx, problems)
    return prior


def _raise_first(ctx: Ctx, problems: list[Problem]) -> None:
    """The loader stops at the first problem; ``registry --check`` lists them all."""
    if problems:
        raise ctx.error(problems[0].message, problems[0].field)


def _parse_backend(ctx: Ctx, raw: Any) -> BackendSpec:
    if not isinstance(raw, Mapping):
        raise ctx.error("is required: a mapping with at least 'type'", "backend")
    backend_type = raw.get("type")
    if not isinstance(backend_type, str) or not backend_type.strip():
        raise ctx.error("is missing or empty", "backend.type")
    options = {k: v for k, v in raw.items() if k != "type"}
    check_free_form(ctx, options, "backend")
    return BackendSpec(type=backend_type, options=MappingProxyType(options))


def _parse_prompts(ctx: Ctx, raw: Any) -> tuple[Prompt, ...]:
    if isinstance(raw, str):
        path = ctx.base_dir / raw
        raw = _load_prompt_file(ctx, path)
        ctx = ctx.at(file=path)
    if not isinstance(raw, list) or not raw:
        raise ctx.error("must be a non-empty list of prompts or a file path", "prompts")
    prompts = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise ctx.error("each prompt must be a mapping {id, text, category}", "prompts")
        check_keys(ctx, item, _PROMPT_KEYS, prefix="prompts.")
        pid = ident(ctx, item, "id", prefix="prompts.")
        where = ctx.at(model=None)
        prompts.append(
            Prompt(
                id=pid,
                text=text(where, item, "text", prefix=f"prompts[{pid}]."),
                category=text(where, item, "category", required=False, prefix=f"prompts[{pid}]."),
            )
        )
    check_unique(ctx, [p.id for p in prompts], "prompt id")
    return tuple(prompts)


def _load_prompt_file(ctx: Ctx, path: Path) -> Any:
    if not path.is_file():
        raise ctx.error(f"prompt file {str(path)!r} does not exist", "prompts")
    if path.suffix == ".jsonl":
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ctx.at(file=path).error(f"cannot read: {exc.strerror}", "prompts") from None
        except UnicodeDecodeError as exc:
            raise ctx.at(file=path).error(
                f"is not UTF-8: byte {exc.start} cannot be decoded", "prompts"
            ) from None
        rows = []
        for n, line in enumerate(lines, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ctx.at(file=path).error(
                        f"line {n} is not JSON: {exc.msg}", "prompts"
                    ) from None
        return rows
    data = _load_yaml(path, file=path)
    return data.get("prompts") if isinstance(data, Mapping) else data


def _load_yaml(path: Path, *, file: Path) -> Any:
    try:
        return load_strict_yaml(path)
    except OSError as exc:
        raise RegistryError(f"cannot read: {exc.strerror}", file=file) from None
    except yaml.YAMLError as exc:
        raise RegistryError(f"not valid YAML: {exc}", file=file) from None
