"""Command line for researchers and maintainers: ``python -m arena_core ...``.

``leaderboard`` replays a vote log (the downloaded dataset, a local folder, or
a FastChat export) into the same board the Space shows; ``compact`` rolls vote
files into monthly Parquet; ``export`` writes FastChat's clean_battle format.
Results go to stdout, logs to stderr, so ``--format json`` output can be piped.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from arena_core.board_row import format_table, write_board
from arena_core.leaderboard import (
    BOARD_COLUMNS,
    METHODS,
    Board,
    BoardParams,
    Entrant,
    board_from_votes,
    check_prior_weight,
)
from arena_core.ratings.bt import NotIdentifiableError
from arena_core.scale.cli_options import add_counts_command, add_scale_options
from arena_core.simulation import SCENARIOS, scenario
from arena_core.snapshots import source as snapshot_source
from arena_core.snapshots.revision import Revision, revision_of
from arena_core.votes.clean import VoteTable
from arena_core.votes.fastchat import to_battles
from arena_core.votes.read import read_votes
from arena_core.window import Window

log = logging.getLogger("arena_core")

#: The first line of ``--help`` (the module docstring's reStructuredText would show its backticks).
DESCRIPTION = (
    "Command line for researchers and maintainers: replay votes into leaderboards, compact and "
    "export vote files, run seeded simulations, check the registry's priors."
)


#: Commands defined in this module. Running one of them builds the parser without the
#: other modules' commands: the analyses import SciPy and pandas, about 0.7 s of a fresh
#: ``leaderboard`` run (``python -X importtime``).
OWN_COMMANDS = ("leaderboard", "compact", "export", "simulate")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The top-level options take no value, so the first word is the command.
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(every_command=command not in OWN_COMMANDS)
    args, extra = parser.parse_known_args(argv)
    if extra and args.run is not _simulate:  # only a scenario takes options of its own
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.run(args)
    except BrokenPipeError:  # e.g. `... | head -1` stopped reading: not an error of ours
        # Python would print a second BrokenPipeError flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return PIPE_CLOSED
    # RegistryError is a ValueError too (not imported: the registry's loader imports YAML).
    except (NotIdentifiableError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {message}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing file, --out naming a folder, a full disk
        message = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else exc
        print(f"error: {message}", file=sys.stderr)
        return 2


#: Exit status when stdout's reader went away, as for a process killed by SIGPIPE (128 + 13).
PIPE_CLOSED = 141


def _parser(every_command: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; without ``every_command``, only this module's commands."""
    parser = argparse.ArgumentParser(prog="python -m arena_core", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    board = sub.add_parser("leaderboard", help="replay votes into a leaderboard")
    board.add_argument(
        "--votes",
        nargs="+",
        metavar="PATH",
        help="JSONL files, folders of shards/Parquet, or FastChat clean_battle exports",
    )
    snapshot_source.add_options(board)
    board.add_argument("--registry", help="registry.yaml: priors, names, and which models count")
    board.add_argument(
        "--arena",
        help="arena id; without it the table lists every arena's board, while json and csv "
        "need one when the votes or the registry hold several",
    )
    board.add_argument("--category", help="only votes of this prompt category (e.g. a language)")
    board.add_argument(
        "--method",
        choices=METHODS,
        default=BoardParams.method,
        help="rating column: Bradley-Terry (default) or sequential Elo",
    )
    board.add_argument(
        "--prior-weight",
        type=_prior_weight,
        default=BoardParams.prior_weight,
        metavar="fitted|W",
        help="prior around each model's prior rating: 'fitted' (default: its spread learnt from "
        "the arena), W votes' worth, or 0 for plain maximum likelihood",
    )
    board.add_argument(
        "--bootstrap",
        type=int,
        default=BoardParams.bootstrap_rounds,
        help="bootstrap rounds for the intervals of --prior-weight 0 (0: none)",
    )
    board.add_argument("--since", help="only votes from this ISO date or time on (UTC if no zone)")
    board.add_argument("--until", help="only votes before this ISO date or time")
    board.add_argument(
        "--half-life",
        type=float,
        metavar="DAYS",
        help="weigh votes by age in the fit: a vote this many days older counts half",
    )
    board.add_argument(
        "--unavailable",
        nargs="+",
        default=(),
        metavar="ID",
        help="models that cannot run (as the Space marks them): left out if they have no votes",
    )
    board.add_argument("--seed", type=int, default=BoardParams.seed, help="bootstrap seed")
    board.add_argument(
        "--voter-kind",
        choices=("human", "judge", "all"),
        default="human",
        help="whose votes: human (default: judges' votes never enter this board), judge, or all",
    )
    board.add_argument(
        "--judge", metavar="ID", help="one judge's board (implies --voter-kind judge)"
    )
    board.add_argument(
        "--style-control",
        action="store_true",
        help="the style-controlled board: speech duration, speaking rate, loudness and the "
        "engine's sample rate as covariates, each with its fitted effect (needs --registry)",
    )
    board.add_argument("--include-flagged", action="store_true", help="count flagged votes too")
    board.add_argument(
        "--fastchat-all",
        action="store_true",
        help="FastChat exports: keep non-anonymous battles too",
    )
    board.add_argument("--format", choices=("table", "json", "csv"), default="table")
    add_scale_options(board)
    board.set_defaults(run=_leaderboard)

    comp = sub.add_parser("compact", help="roll vote files into monthly Parquet files")
    where = comp.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--votes", metavar="DIR", help="a local vote folder (JSONL shards, Parquet files)"
    )
    where.add_argument(
        "--repo", help="a Hub dataset repo (token from HF_TOKEN), compacted in one commit"
    )
    comp.add_argument(
        "--min-age",
        type=float,
        metavar="MINUTES",
        help="leave files younger than this alone (a live process may still write them); "
        "default 60",
    )
    comp.set_defaults(run=_compact)

    export = sub.add_parser("export", help="write votes in another format")
    export.add_argument("--votes", nargs="+", required=True, metavar="PATH")
    export.add_argument(
        "--format",
        choices=("fastchat",),
        default="fastchat",
        help="fastchat: a clean_battle JSON list, for FastChat's notebooks",
    )
    export.add_argument("--out", required=True, metavar="FILE")
    export.add_argument("--arena", help="only this arena's votes")
    export.add_argument("--include-flagged", action="store_true")
    export.set_defaults(run=_export)

    # Each scenario adds its own options when it runs (see _simulate), so building this
    # parser imports no scenario; -h is handled there too, to list those options.
    sim = sub.add_parser(
        "simulate",
        add_help=False,
        parents=[_simulate_common()],
        help="seeded simulations with known truth (statistical claims)",
    )
    sim.set_defaults(run=_simulate)
    add_counts_command(sub)
    if every_command:
        from arena_core.analysis.commands import add_commands as add_analysis_commands
        from arena_core.judges.commands import add_commands as add_judge_commands
        from arena_core.registry.check import add_commands as add_registry_commands

        add_judge_commands(sub)
        add_analysis_commands(sub)
        add_registry_commands(sub)
    return parser  # fmt: skip


def _simulate_common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    common.add_argument(
        "--scenario",
        choices=tuple(SCENARIOS),
        default=next(iter(SCENARIOS)),
        help="which claim to check (default: %(default)s)",
    )
    common.add_argument(
        "--seeds",
        type=int,
        default=None,
        metavar="N",
        help="independent repetitions to average over (default: the scenario's)",
    )
    common.add_argument("--seed", type=int, default=0, help="first seed")
    common.add_argument("--format", choices=("table", "json"), default="table")
    return common  # fmt: skip


def _simulate(args) -> int:
    module = scenario(args.scenario)
    full = argparse.ArgumentParser(prog=f"python -m arena_core simulate --scenario {args.scenario}",
                                   description=module.__doc__.splitlines()[0], add_help=False,
                                   parents=[_simulate_common()])  # fmt: skip
    module.add_arguments(full)
    args = full.parse_args(args.extra, namespace=args)
    if args.help:
        full.print_help()
        return 0
    result = module.run(args)
    if args.format == "json":
        json.dump(result, sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(module.format_table(result))
    return 0


def _compact(args) -> int:
    # Imported here, as the Hub client below: the other commands do not need compaction's
    # modules, and a fresh `leaderboard` run paid 0.12 s for them.
    from arena_core.dataset.compact import MIN_AGE_MINUTES, CompactionError, compact

    if args.min_age is None:
        args.min_age = MIN_AGE_MINUTES
    try:
        return _compact_with(args, compact)
    except CompactionError as exc:  # nothing was deleted: the message says what differed
        raise ValueError(f"compaction stopped, nothing deleted: {exc}") from exc


def _compact_with(args, compact) -> int:
    from arena_core.dataset.compact import CompactionError

    if args.repo:
        # Imported here: the Hub client is slow to import and only this command needs it.
        from huggingface_hub import HfApi

        from arena_core.dataset.repo import compact_repo

        token = os.environ.get("HF_TOKEN")
        with tempfile.TemporaryDirectory(prefix="arena-compact-") as tmp:
            try:
                report = compact_repo(
                    HfApi(token=token), args.repo, Path(tmp), min_age_minutes=args.min_age
                )
            except (CompactionError, ValueError):
                raise
            except Exception as exc:  # the Hub's client raises HTTP, offline, DNS, OS errors
                # Every change is one commit, made last: a failure leaves the repo as it was.
                raise ValueError(f"could not compact {args.repo}, the repo is unchanged: "
                                 f"{type(exc).__name__}: {exc}") from None  # fmt: skip
    else:
        report = compact(Path(args.votes), min_age_minutes=args.min_age)
    print(report.summary())
    return 0


def _export(args) -> int:
    votes = read_votes(args.votes)
    if args.arena:
        keep = votes.encoded["arena"].isin([args.arena])
        votes = VoteTable(votes.table.filter(pa.array(keep)), votes.ts_us[keep],
                          {k: e.select(keep) for k, e in votes.encoded.items()}, votes.skipped)  # fmt: skip
    battles = to_battles(votes, include_flagged=args.include_flagged)
    from arena_core.votes.parquet import write_atomically

    text = json.dumps(battles, ensure_ascii=False).encode("utf-8")
    try:
        write_atomically(args.out, lambda f: f.write(text))
    except OSError as exc:  # e.g. a full disk: the error has no file name of its own
        raise OSError(exc.errno, exc.strerror, args.out) from None
    print(f"wrote {len(battles)} battles to {args.out}", file=sys.stderr)
    return 0


def _leaderboard(args) -> int:
    params = BoardParams(
        method=args.method,
        prior_weight=args.prior_weight,
        bootstrap_rounds=args.bootstrap,
        seed=args.seed,
        include_flagged=args.include_flagged,
        voter_kind="judge" if args.judge else None if args.voter_kind == "all" else args.voter_kind,
        judge=args.judge,
        half_life_days=args.half_life,
    )
    window = Window.parse(args.since, args.until)
    args = snapshot_source.resolve(args)  # --repo: the revision's votes and registry
    registry = _registry(args.registry)
    if args.style_control:
        return _style_board(args, registry, params, window)
    from arena_core.scale.commands import scaled_boards  # DuckDB is imported only when used

    scaled = scaled_boards(args, params, window, registry)
    boards, revision = scaled or _replayed_boards(args, params, window, registry)
    if args.format != "table":  # the table prints them itself
        for warning in boards[0].warnings:
            log.warning("%s", warning)
        write_board(boards[0], args.format, sys.stdout,
               snapshot_source.document(boards[0], revision, params, args))  # fmt: skip
        return 0
    sys.stdout.write(
        "\n\n".join(format_table(b, _titles(registry, b.arena)) for b in boards) + "\n"
    )
    return 0


def _replayed_boards(args, params, window, registry) -> tuple[list[Board], Revision]:
    """The boards of ``leaderboard`` by the in-process path (every vote read into memory),
    and the revision they were computed from."""
    votes = read_votes(args.votes, columns=(*BOARD_COLUMNS, "vote_id"), fastchat_all=args.fastchat_all,
                       fastchat_arena=args.arena or "fastchat")  # fmt: skip
    arenas = [args.arena] if args.arena else _arenas(votes, registry, args.format)
    boards = []
    for arena_id in arenas:
        entrants = Entrant.from_arena(registry.arena(arena_id)) if registry else None
        boards.append(board_from_votes(votes, arena_id, category=args.category, entrants=entrants,
                                       params=params, window=window,
                                       available=dict.fromkeys(args.unavailable, False)))  # fmt: skip
    return boards, revision_of(votes, **args.hub)


def _style_board(args, registry, params: BoardParams, window: Window) -> int:
    """``leaderboard --style-control``: the style-controlled board of the votes the default
    board with the same options counts. Options it cannot honour are refused, not ignored."""
    from arena_core.analysis.boards import ANALYSIS_COLUMNS, check_style_params, style_board
    from arena_core.analysis.text import write_style_board

    if not args.votes:  # its covariates are per vote: a counts table has none
        raise ValueError("--style-control reads the votes: give --votes or --repo")
    if args.counts or args.engine == "duckdb":
        raise ValueError("--style-control reads each vote's style: --counts and --engine duckdb "
                         "do not apply")  # fmt: skip
    if registry is None:
        raise ValueError("--style-control needs --registry: the fit starts from its models' priors")
    check_style_params(params)
    votes = read_votes(args.votes, columns=ANALYSIS_COLUMNS, fastchat_all=args.fastchat_all,
                       fastchat_arena=args.arena or "fastchat")  # fmt: skip
    arenas = [args.arena] if args.arena else _arenas(votes, registry, args.format)
    boards = [style_board(votes, registry.arena(a), category=args.category, params=params,
                          window=window) for a in arenas]  # fmt: skip
    for k, board in enumerate(boards):
        if k:
            sys.stdout.write("\n")
        write_style_board(board, args.format, sys.stdout, _titles(registry, board.arena))
    return 0


def _registry(path: str | None):
    """The registry at ``path``, or None. Imported here: the loader imports YAML, which a
    board without a registry does not need."""
    if path is None:
        return None
    from arena_core.registry import load_registry

    return load_registry(path)


def _prior_weight(text: str) -> float | None:
    """``fitted`` or a number of votes' worth (argparse type), checked here so a bad value
    stops the command before anything is read or written."""
    if text == "fitted":
        return None
    try:
        weight = float(text)
        check_prior_weight(weight)
    except ValueError as exc:
        reason = (
            str(exc)
            if "prior weight" in str(exc)
            else f"expected 'fitted' or a number, got {text!r}"
        )
        raise argparse.ArgumentTypeError(reason) from None
    return weight


def _arenas(votes, registry, fmt: str) -> list[str]:
    """The arenas to print without ``--arena``: the registry's (else those in the votes); a
    machine format takes one board, so several are refused with their list."""
    found = sorted(set(votes.column("arena").unique().to_pylist()))
    arenas = [a.id for a in registry.arenas] if registry is not None else found
    if not arenas:
        raise ValueError("the votes hold no arena; pass --registry or --arena")
    if len(arenas) > 1 and fmt != "table":
        raise ValueError(f"there are several arenas ({', '.join(arenas)}); choose one with "
                         f"--arena, or leave --format out to print every arena's table")  # fmt: skip
    return arenas


def _titles(registry, arena_id: str) -> dict[str, str]:
    """Model id -> display name from the registry (empty without one: names are the ids)."""
    if registry is None:
        return {}
    return {m.id: m.name for m in registry.arena(arena_id).models}
