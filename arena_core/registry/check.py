"""``python -m arena_core registry --check``: which ratings rest on a published figure, and
which priors cannot be trusted.

The check lists every model without a prior (a notice: most models have no
published figure, and then the arena's votes alone rate them), and every
problem with a prior or a mapping, with the rules of
:mod:`arena_core.registry.priors`: a prior without a source, a mapping that
does not round-trip, a prior on another benchmark, a bad or future date. The
loader stops at the first problem; the check walks the whole file and lists
them all, then validates the rest of the file with the loader (priors with
problems set aside) and the backend blocks as the Space's start does, so a file the
check passes is a file the Space loads.

Exit codes: 0 when no prior or mapping has a problem (models without a prior
are fine), 1 when one does, 2 when the file cannot be read or something other
than a prior is wrong (the CLI's usual error code, with the loader's message).
"""

from __future__ import annotations

import copy
import json
import os
import textwrap
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

from arena_core.backends.factory import registry_problems
from arena_core.printable import emit
from arena_core.registry.fields import Ctx, RegistryError
from arena_core.registry.loader import load_document, parse_registry
from arena_core.registry.priors import Prior, read_mapping, read_prior

#: The notice kind: a model without a prior (not a problem, the check still passes).
NO_PRIOR = "no_prior"
#: Exit code of a check that found problems (2 is the CLI's code for an unreadable file).
EXIT_PROBLEMS = 1
#: Width of the text report's wrapped lists (a terminal's).
_WIDTH = 100


@dataclass(frozen=True)
class Finding:
    """One model without a prior, or one problem, located by arena, model and field."""

    kind: str
    arena: str
    model: str | None
    field: str | None
    message: str


@dataclass(frozen=True)
class CheckReport:
    file: str | None
    models: int
    findings: tuple[Finding, ...]
    #: (arena id, model id, prior) of every prior that passed.
    priors: tuple[tuple[str, str, Prior], ...]

    @property
    def without_prior(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == NO_PRIOR]

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.kind != NO_PRIOR]

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "ok": not self.problems,
            "models": self.models,
            "without_prior": [{"arena": f.arena, "model": f.model} for f in self.without_prior],
            "problems": [asdict(f) for f in self.problems],
            "priors": [{"arena": a, "model": m, **p.to_json()} for a, m, p in self.priors],
        }


def check_registry(path: str | Path, *, today: date | None = None) -> CheckReport:
    """Check a registry file; raises :class:`RegistryError` for what is not about priors."""
    path = Path(path)
    return check_document(load_document(path), file=path, base_dir=path.parent, today=today)


def check_document(data: Any, *, file: Path | None = None, base_dir: Path | None = None,
                   today: date | None = None) -> CheckReport:  # fmt: skip
    """Check an already-parsed registry document (see the module docstring)."""
    ctx = Ctx(file=file, base_dir=base_dir or Path("."))
    findings, priors, models, set_aside = [], [], 0, set()
    for a, arena in _entries(data.get("arenas") if isinstance(data, Mapping) else None):
        arena_id = _id(arena, f"arenas[{a}]")
        mapping, problems = read_mapping(ctx.at(arena=arena_id), arena.get("prior_mapping"))
        findings += [Finding(p.kind, arena_id, None, p.field, p.message) for p in problems]
        if problems:
            set_aside.add((a, None))
        for m, model in _entries(arena.get("models")):
            models += 1
            model_id = _id(model, f"models[{m}]")
            if model.get("prior") is None:
                findings.append(Finding(NO_PRIOR, arena_id, model_id, None, "no prior"))
                continue
            prior, problems = read_prior(ctx.at(arena=arena_id, model=model_id), model["prior"],
                                         mapping, mapping_broken=bool(problems), today=today)  # fmt: skip
            findings += [Finding(p.kind, arena_id, model_id, p.field, p.message) for p in problems]
            if prior is None:
                set_aside.add((a, m))
            else:
                priors.append((arena_id, model_id, prior))
    registry = parse_registry(_without(data, set_aside), file=file, base_dir=base_dir)
    # The Space's start checks the backend blocks too (an unknown type, a misspelt or
    # missing option): without this the check passed a file the Space then refused.
    backend_problems = registry_problems(registry)
    if backend_problems:
        raise RegistryError("; ".join(backend_problems), file=file)
    return CheckReport(str(file) if file else None, models, tuple(findings), tuple(priors))


def _entries(raw: Any) -> list[tuple[int, Mapping]]:
    """The mappings of a list, with their positions (anything else: the loader's to report)."""
    return [(k, x) for k, x in enumerate(raw) if isinstance(x, Mapping)] if isinstance(
        raw, list
    ) else []  # fmt: skip


def _id(entry: Mapping, where: str) -> str:
    value = entry.get("id")
    return value if isinstance(value, str) and value else where


def _without(data: Any, set_aside: set[tuple[int, int | None]]) -> Any:
    """A copy of the document without the priors (and mappings) that have problems, so
    the loader validates everything else."""
    if not set_aside:
        return data
    data = copy.deepcopy(data)
    arenas = data["arenas"]
    for a, m in set_aside:
        if m is None:
            arenas[a].pop("prior_mapping", None)
            for model in arenas[a].get("models") or []:
                if isinstance(model, dict):
                    model.pop("prior", None)
        else:
            arenas[a]["models"][m].pop("prior", None)
    return data


def format_report(report: CheckReport) -> str:
    """The report as text: a summary line, the models without a prior, then each problem."""
    lines = [f"{report.file or 'registry'}: {report.models} models, {len(report.priors)} with "
             f"a sourced prior, {len(report.without_prior)} without, "
             f"{len(report.problems)} problem(s)"]  # fmt: skip
    if report.without_prior:
        lines.append("\nModels without a prior (rated by the arena's votes alone):")
        by_arena: dict[str, list[str]] = {}
        for f in report.without_prior:
            by_arena.setdefault(f.arena, []).append(f.model)
        lines += [textwrap.fill(", ".join(ids), _WIDTH, initial_indent=f"  {arena}: ",
                                subsequent_indent="    ", break_on_hyphens=False)
                  for arena, ids in by_arena.items()]  # fmt: skip
    if report.priors:
        lines.append("\nPriors:")
        lines += [f"  {a} / {m}: {p.benchmark} {p.value:g} -> rating {p.rating:.1f} "
                  f"({p.source}, read {p.accessed.isoformat()})" for a, m, p in report.priors]  # fmt: skip
    if report.problems:
        lines.append("\nProblems:")
        for f in report.problems:
            where = f.arena + (f" / {f.model}" if f.model else "")
            lines.append(f"  {f.kind}: {where}, field {f.field}: {f.message}")
    return "\n".join(lines)


def add_commands(sub) -> None:
    """Register ``registry`` on the CLI's subparsers."""
    cmd = sub.add_parser(
        "registry",
        help="check the registry's priors: models without one, priors without a source, "
        "mappings that do not round-trip",
    )
    action = cmd.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--check",
        action="store_true",
        help="list models without a prior and every problem with a prior or a mapping; "
        "exit 1 on a problem with a prior or a mapping, 2 when the file cannot be loaded",
    )
    cmd.add_argument(
        "--registry", default=os.environ.get("ARENA_REGISTRY") or "registry.yaml", metavar="FILE"
    )
    cmd.add_argument("--format", choices=("table", "json"), default="table")
    cmd.set_defaults(run=_check)


def _check(args) -> int:
    report = check_registry(args.registry, today=date.today())
    if args.format == "json":
        emit(json.dumps(report.to_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    else:
        emit(format_report(report) + "\n")
    return EXIT_PROBLEMS if report.problems else 0
