"""``python -m arena_core analyze ...``: analyses of the votes for researchers.

``analyze complementarity`` measures, for every pair of an arena's models with enough
shared prompts, how differently they fare across prompts
(:mod:`arena_core.analysis.complementarity`): the Spearman correlation of their
per-prompt scores, the oracle gain of picking the better of the two on each prompt,
its interval, and whether it exceeds what noise alone gives.
"""

from __future__ import annotations

import argparse
import json

from arena_core.analysis.complementarity import MIN_OVERLAP, ROUNDS
from arena_core.analysis.model_commands import add_commands as add_model_commands
from arena_core.printable import emit


def add_commands(sub) -> None:
    """Register ``analyze`` and its analyses, and ``model``, on the CLI's subparsers."""
    add_model_commands(sub)
    analyze = sub.add_parser("analyze", help="analyses of the votes for researchers")
    analyses = analyze.add_subparsers(required=True, metavar="ANALYSIS")
    comp = analyses.add_parser(
        "complementarity",
        help="pairs of models that win on different prompts: Spearman of their per-prompt "
        "scores and the oracle gain of a per-prompt router, with an interval and a flag",
    )
    comp.add_argument(
        "--votes", nargs="+", required=True, metavar="PATH",
        help="JSONL files, folders of shards/Parquet, or FastChat clean_battle exports",
    )  # fmt: skip
    comp.add_argument("--arena", required=True, help="arena id (FastChat exports are read into it)")
    comp.add_argument("--min-overlap", type=_at_least(2), default=MIN_OVERLAP, metavar="N",
                      help="fewest shared prompts for a pair to be measured (default %(default)s)")  # fmt: skip
    comp.add_argument("--seed", type=int, default=0, help="seed of the null and the bootstrap")
    comp.add_argument("--rounds", type=_at_least(19), default=ROUNDS, metavar="R",
                      help="null and bootstrap rounds (default %(default)s)")  # fmt: skip
    comp.add_argument("--format", choices=("table", "json"), default="table")
    comp.set_defaults(run=_complementarity)


def _at_least(low: int):
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        return value

    return parse


def _complementarity(args) -> int:
    import numpy as np

    from arena_core.analysis.complementarity import ComplementarityParams
    from arena_core.analysis.insights import COMPLEMENTARITY_COLUMNS, complementarity_report
    from arena_core.analysis.text import complementarity_table
    from arena_core.cli.board import require_votes_of
    from arena_core.votes.read import fastchat_arena_of, read_votes

    votes = read_votes(
        args.votes,
        columns=COMPLEMENTARITY_COLUMNS,
        fastchat_arena=fastchat_arena_of(args.votes, args.arena),
    )
    require_votes_of(votes.table, "arena", args.arena)
    params = ComplementarityParams(min_overlap=args.min_overlap, rounds=args.rounds)
    report = complementarity_report(votes, args.arena, params,
                                    rng=np.random.default_rng(args.seed))  # fmt: skip
    if args.format == "json":
        out = report.to_json() | {"seed": args.seed, "skipped": dict(votes.skipped)}
        emit(json.dumps(out, indent=1, allow_nan=False) + "\n")
    else:
        text = complementarity_table(report, {}) + "\n"
        if votes.skipped:
            skipped = ", ".join(f"{k} {v}" for k, v in sorted(votes.skipped.items()))
            text += f"rows skipped while reading: {skipped}\n"
        emit(text)
    return 0
