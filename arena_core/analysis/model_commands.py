"""``python -m arena_core model ...``: one model's page as a table or JSON.

The numbers are :func:`~arena_core.analysis.model_report.model_report`'s; this module
reads the votes and the registry, and prints. Availability and median generation
time are the running Space's, so the CLI prints them as unknown (null in JSON).
"""

from __future__ import annotations

import json
import math

from arena_core.analysis.model_report import RECENT
from arena_core.printable import emit, terminal_safe


def add_commands(sub) -> None:
    """Register ``model`` on the CLI's subparsers."""
    cmd = sub.add_parser("model", help="one model's page: rating history, results per opponent "
                         "and category, style, registry facts, recent battles")  # fmt: skip
    cmd.add_argument("--votes", nargs="+", required=True, metavar="PATH",
                     help="JSONL files, folders of shards/Parquet, or FastChat clean_battle exports")  # fmt: skip
    cmd.add_argument("--arena", required=True, help="arena id")
    cmd.add_argument("--model", required=True, help="model id")
    cmd.add_argument("--registry", help="registry.yaml: priors, names, licence, which models count")
    cmd.add_argument("--recent", type=int, default=RECENT, metavar="K",
                     help="recent battles to list (default %(default)s)")  # fmt: skip
    cmd.add_argument("--format", choices=("table", "json"), default="table")
    cmd.set_defaults(run=_model)


def _model(args) -> int:
    from arena_core.analysis.model_report import MODEL_COLUMNS, model_report
    from arena_core.registry import load_registry
    from arena_core.votes.read import fastchat_arena_of, read_votes

    if args.recent < 0:
        raise ValueError("--recent must be at least 0")
    arena = load_registry(args.registry).arena(args.arena) if args.registry else None
    votes = read_votes(
        args.votes, columns=MODEL_COLUMNS, fastchat_arena=fastchat_arena_of(args.votes, args.arena)
    )
    report = model_report(votes, args.arena, args.model, arena=arena, recent=args.recent)
    if args.format == "json":
        out = report.to_json() | {"skipped": dict(sorted(votes.skipped.items()))}
        emit(json.dumps(_no_nan(out), indent=1, allow_nan=False) + "\n")
    else:
        emit(model_table(report) + "\n")
    return 0


def _no_nan(value):
    """JSON has no NaN: unknown numbers are null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


def _num(x, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _rate(r) -> str:
    return "-" if r.rate is None else f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}]"


def _text(value, missing: str = "-") -> str:
    """A name, id, prompt or registry text as the table prints it: quoted with JSON's escapes
    when a terminal would garble it, as the ``leaderboard`` table prints names (without
    ``--registry`` the names are the votes' ids, which may be any string: a newline in one
    broke its row in two, an escape sequence recoloured the terminal)."""
    return missing if value is None or value == "" else terminal_safe(str(value))


def _prior_line(prior: dict) -> str:
    """The registry's prior as one line: ``prior none`` without one (it printed
    ``prior - (none , no source)``, for every shipped model)."""
    if not prior:
        return "prior none"
    return (f"prior {_num(prior.get('rating'))} ({_text(prior.get('benchmark'), 'none')} "
            f"{prior.get('value', '')}, {_text(prior.get('source'), 'no source')})")  # fmt: skip


def model_table(report) -> str:
    """The report as plain-text sections, as the CLI prints it."""
    row, reg = report.board_row, report.registry or {}
    prior = reg.get("prior") or {}
    lines = [
        f"{_text(report.name)} ({_text(report.model)}) in {_text(report.arena)}: "
        f"{report.votes_used} counted votes in the arena",
        f"licence {_text(reg.get('license'))}, source {_text(reg.get('url'))}, family "
        f"{_text(reg.get('family'))}",
        _prior_line(prior),
    ]
    if row is not None:
        lines.append(f"rating {_num(row.rating)} [{_num(row.ci_low)}, {_num(row.ci_high)}], "
                     f"seq. Elo {_num(row.elo)}, provenance {row.provenance}, votes' share "
                     f"{_num(row.votes_share, 3)}, shift from prior {_num(row.prior_shift)}")  # fmt: skip
    lines.append("available: unknown offline; median generation time: unknown offline")
    lines += ["", "opponent | battles | win | tie | loss | both bad"]
    lines += [f"{_text(o.opponent)} | {o.battles} | {_rate(o.win)} | {_rate(o.tie)} | "
              f"{_rate(o.loss)} | {_rate(o.both_bad)}" for o in report.opponents]  # fmt: skip
    lines += ["", "category | battles | win rate (decided) | rating [95% CI]"]
    lines += [f"{_text(c.category, '(none)')} | {c.battles} | {_rate(c.win_rate)} | "
              f"{_num(c.rating)} [{_num(c.low)}, {_num(c.high)}]"
              for c in report.categories]  # fmt: skip
    lines += ["", "style | model median | arena median | votes"]
    lines += [f"{s.field} | {_num(s.model_median, 2)} | {_num(s.arena_median, 2)} | {s.votes}"
              for s in report.style]  # fmt: skip
    lines += ["", "Bradley-Terry history: arena votes | model battles | rating [95% CI]"]
    lines += [f"{p.arena_votes} | {p.battles} | {_num(p.rating)} [{_num(p.low)}, {_num(p.high)}]"
              for p in report.bt_history]  # fmt: skip
    lines += ["", "recent battles: when | opponent | side | result | prompt"]
    lines += [f"{b.ts} | {_text(b.opponent)} | {b.side} | {b.result} | "
              f"{_text(b.prompt or b.prompt_id)}" for b in report.recent]  # fmt: skip
    return "\n".join(lines)
