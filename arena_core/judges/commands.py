"""``python -m arena_core judge``: run a judge over battles and append its votes.

The command builds the same service the Space runs (registry, model pools, blind
delivery, the vote log in ``--data``, the Hub sync when ``ARENA_DATASET_REPO`` and
``HF_TOKEN`` are set), replays the log, and judges battles of the arena's prompt
set through :meth:`ArenaService.judge_vote`. The operator running it owns the data
folder; the token it votes with is ``ARENA_JUDGE_TOKEN`` or, without one, a random
token of this run only.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys

from arena_core.printable import emit


def add_commands(sub) -> None:
    """Register the judges' subcommands on the CLI's subparsers."""
    run = sub.add_parser(
        "judge", help="run an automatic judge over prompt-set battles, appending its votes"
    )
    run.add_argument("--arena", required=True, help="arena id (the judge must be entered in it)")
    run.add_argument("--judge", required=True, help="judge id from the registry's judges")
    run.add_argument("--battles", type=_positive, default=20, help="battles to judge (default 20)")
    run.add_argument(
        "--data",
        default=os.environ.get("ARENA_DATA_DIR") or "data",
        metavar="DIR",
        help="the arena's data folder: votes are appended to DIR/votes (default: ARENA_DATA_DIR "
        "or ./data)",
    )
    run.add_argument(
        "--registry", default=os.environ.get("ARENA_REGISTRY") or "registry.yaml", metavar="FILE"
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(run=_judge)

    report = sub.add_parser(
        "judges",
        help="the judges against the human board: agreement, correlations, position, "
        "self-preference and duration biases, and the corrected boards",
    )
    report.add_argument("--votes", nargs="+", required=True, metavar="PATH")
    report.add_argument("--arena", required=True)
    report.add_argument(
        "--registry", default=os.environ.get("ARENA_REGISTRY") or "registry.yaml", metavar="FILE"
    )
    report.add_argument("--format", choices=("table", "json"), default="table")
    report.set_defaults(run=_report)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _judge(args) -> int:
    from tqdm import tqdm  # a dependency of huggingface_hub

    from arena_core.judges.factory import make_judge
    from arena_core.judges.runner import judge_battles
    from arena_core.registry import load_registry
    from arena_core.space.config import Settings
    from arena_core.space.startup import build_service
    from arena_core.space.views import ArenaError

    env = dict(os.environ, ARENA_DATA_DIR=str(args.data), ARENA_REGISTRY=str(args.registry),
               ARENA_WARMUP="0", ARENA_JUDGES="")  # fmt: skip
    # The token the service takes is the one voted with: Settings reads a blank one as
    # unset (no judge vote taken), so a blank one is replaced here as a missing one is
    # (it was voted with as given, and every verdict of the run was refused).
    if not env.get("ARENA_JUDGE_TOKEN", "").strip():
        env["ARENA_JUDGE_TOKEN"] = secrets.token_hex(16)
    settings = Settings.from_env(env)
    token = settings.judge_token
    # The judge and its arena are checked before the service is built: that makes --data's
    # folders (votes, cache, shaped audio, their secrets), left behind by a refused typo.
    spec = load_registry(settings.registry).judge(args.judge)
    judge = make_judge(spec, env)
    if args.arena not in spec.arenas:
        raise ArenaError(f"Judge {spec.id!r} does not judge arena {args.arena!r}.")
    service = build_service(settings, env)
    try:
        service.load()
        with tqdm(total=args.battles, unit="battle", disable=args.quiet, file=sys.stderr) as bar:
            run = judge_battles(service, judge, args.arena, args.battles, token,
                                progress=lambda _: bar.update(1))  # fmt: skip
        if service.sync is not None:
            service.sync.flush()
    finally:
        service.close()
    print(f"{run.judged} battles judged ({run.votes} votes) in {settings.votes_dir}")
    for reason, count in run.not_judged.most_common():
        print(f"  not judged ({count}): {reason}")
    return 0 if run.judged else 1


def _report(args) -> int:
    import json

    from arena_core.analysis.boards import ANALYSIS_COLUMNS, judges_report
    from arena_core.analysis.text import fit_failed, judges_table
    from arena_core.cli.board import require_votes_of
    from arena_core.registry import load_registry
    from arena_core.votes.read import read_votes

    registry = load_registry(args.registry)
    arena = registry.arena(args.arena)
    votes = read_votes(args.votes, columns=ANALYSIS_COLUMNS)
    require_votes_of(votes.table, "arena", arena.id)
    report = judges_report(votes, arena, registry)
    if args.format == "json":
        emit(json.dumps(report.to_json(), indent=1, allow_nan=False, default=_plain) + "\n")
        if report.fit_error:  # in the JSON as fit_error; said on stderr too, for the operator
            sys.stderr.write(fit_failed(report.fit_error) + "\n")
    else:
        names = {m.id: m.name for m in arena.models}
        emit(judges_table(report, arena.id, names) + "\n")
    return 0


def _plain(value):
    """JSON for numpy scalars; NaN never reaches here (allow_nan=False refuses it)."""
    return value.item() if hasattr(value, "item") else str(value)
