"""``python -m arena_core leaderboard``: replay votes into the board the Space shows.

The in-process path reads every vote (:func:`~arena_core.votes.read.read_votes`);
large Parquet logs and ``--counts`` go through :mod:`arena_core.scale.commands`;
``--style-control`` fits the style-controlled board of the same votes. A value the
votes cannot answer (an arena, category or judge they do not hold) is refused by
name, not answered with an empty board.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from arena_core.board_row import format_table, write_board
from arena_core.leaderboard import (
    METHODS,
    Board,
    BoardParams,
    Entrant,
    board_columns,
    board_from_votes,
    check_prior_weight,
)
from arena_core.printable import emit
from arena_core.scale.cli_options import add_read_at, add_scale_options, reader_clock
from arena_core.simulation.options import whole
from arena_core.snapshots import source as snapshot_source
from arena_core.snapshots.revision import Revision, revision_of
from arena_core.votes.arrow import filled
from arena_core.votes.kernels import cast, pc, unique
from arena_core.votes.read import fastchat_arena_of, read_votes, unread_in_folder
from arena_core.votes.reasons import UNREADABLE
from arena_core.window import Window

log = logging.getLogger("arena_core")


def add_command(sub) -> None:
    """Register ``leaderboard`` on the CLI's subparsers."""
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
        type=whole(0),
        default=BoardParams.bootstrap_rounds,
        help="bootstrap rounds for the intervals of --prior-weight 0 (0: none)",
    )
    board.add_argument("--since", help="only votes from this ISO date or time on (UTC if no zone)")
    board.add_argument("--until", help="only votes before this ISO date or time")
    add_read_at(board)
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
    board.add_argument("--seed", type=whole(0), default=BoardParams.seed, help="bootstrap seed")
    board.add_argument(
        "--voter-kind",
        choices=("human", "judge", "all"),
        default=None,  # human; None tells an explicit one apart, to refuse it beside --judge
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
    board.set_defaults(run=run)


def run(args) -> int:
    if args.judge and args.voter_kind == "human":  # was dropped silently: the judge's board
        raise ValueError(f"--judge {args.judge} is a judge's board; it cannot be read with "
                         f"--voter-kind human (leave --voter-kind out)")  # fmt: skip
    args.voter_kind = args.voter_kind or "human"
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
    args.now_us = reader_clock(args)
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
    emit("\n\n".join(format_table(b, _titles(registry, b.arena)) for b in boards) + "\n")
    return 0


def _replayed_boards(args, params, window, registry) -> tuple[list[Board], Revision]:
    """The boards of ``leaderboard`` by the in-process path (every vote read into memory),
    and the revision they were computed from."""
    columns = (*board_columns(params.voter_kind), "vote_id")
    votes = read_votes(args.votes, columns=columns, fastchat_all=args.fastchat_all,
                       fastchat_arena=fastchat_arena_of(args.votes, args.arena),
                       now_us=args.now_us)  # fmt: skip
    arenas = choose_arenas(votes.table, args, registry, votes.skipped)
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
    if args.unavailable:  # it lists only models its votes rate: there is no row to mark
        raise ValueError("--unavailable marks rows of the default board; the style-controlled "
                         "board lists only models its votes rate and does not take it")  # fmt: skip
    check_style_params(params)
    votes = read_votes(args.votes, columns=ANALYSIS_COLUMNS, fastchat_all=args.fastchat_all,
                       fastchat_arena=fastchat_arena_of(args.votes, args.arena),
                       now_us=args.now_us)  # fmt: skip
    arenas = choose_arenas(votes.table, args, registry, votes.skipped)
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


def choose_arenas(table: pa.Table, args, registry, skipped: Mapping[str, int]) -> list[str]:
    """The arenas to print, after checking that the votes can answer what was asked.

    ``table`` holds the valid votes (or a counts table: the same ``arena``, ``category``
    and ``judge`` columns). Without ``--arena``: the registry's arenas, else the votes';
    a machine format takes one board, so several are refused with their list. An
    ``--arena``, ``--category`` or ``--judge`` that neither the votes nor the registry
    know is refused by name with what there is: an empty board would look like an
    answer. An arena of the registry without votes yet is an answer (an empty board).
    """
    found = _distinct(table, "arena")
    known = [a.id for a in registry.arenas] if registry is not None else []
    if not found and (not known or skipped.get(UNREADABLE)):
        raise ValueError(_nothing_valid(args.votes or args.counts, skipped))
    if args.arena:
        _check_known("arena", args.arena, found, known)
        arenas = [args.arena]
    else:
        arenas = known or found
        if len(arenas) > 1 and args.format != "table":
            raise ValueError(f"there are several arenas ({', '.join(arenas)}); choose one with "
                             "--arena, or leave --format out to print every arena's table")  # fmt: skip
    if args.category is None and not getattr(args, "judge", None):
        return arenas
    mine = table.filter(pc.is_in(table.column("arena").cast(pa.string()), pa.array(arenas)))
    if args.category is not None:
        listed = [c for a in arenas if a in known for c in registry.arena(a).categories]
        _check_known("category", args.category, _distinct(mine, "category"), listed,
                     where=f" in {', '.join(arenas)}")  # fmt: skip
    if getattr(args, "judge", None):
        listed = [j.id for j in registry.judges] if registry is not None else []
        _check_known("judge", args.judge, _distinct(mine, "judge"), listed,
                     where=f" in {', '.join(arenas)}")  # fmt: skip
    return arenas


def _distinct(table: pa.Table, column: str) -> list[str]:
    """The column's distinct values, nulls left out, sorted. A dictionary chunk (the votes'
    categorical columns) answers from the codes its rows use, without a string per row."""
    if column not in table.column_names:
        return []
    found: set[str] = set()
    for chunk in table.column(column).chunks:
        if pa.types.is_dictionary(chunk.type) and pa.types.is_string(chunk.type.value_type):
            values = chunk.dictionary.to_pylist()
            used = np.bincount(filled(chunk.indices, len(values)), minlength=len(values) + 1)
            found.update(values[k] for k in np.flatnonzero(used[:-1]))
        else:
            found.update(unique(cast(chunk, pa.string())).to_pylist())
    found.discard(None)
    return sorted(found)


def require_votes_of(table: pa.Table, column: str, value: str) -> None:
    """Refuse an analysis of ``value`` (an arena, say) that the votes in ``table`` do not
    hold: its report would be empty, which reads like an answer."""
    _check_known(column, value, _distinct(table, column), [])


def _check_known(what: str, value: str, found: list[str], listed: list[str], where: str = ""):
    if value in found or value in listed:
        return
    there = ", ".join(found) if found else "none"
    extra = f"; the registry lists: {', '.join(listed)}" if listed else ""
    raise ValueError(f"no votes of {what} {value!r}{where} (the votes hold: {there}{extra})")


def _nothing_valid(paths, skipped: Mapping[str, int]) -> str:
    where = " ".join(map(str, paths)) if isinstance(paths, list | tuple) else str(paths)
    if not skipped:
        unread = _not_vote_files(paths)
        if unread:  # a folder of FastChat exports, say: the folder looked empty of votes
            return (f"no vote in {where}: a folder is read for its *.jsonl and *.parquet files "
                    f"only, and it holds {', '.join(unread)}; name such a file itself (a "
                    "FastChat export .json, a Parquet file under another name)")  # fmt: skip
        return f"no vote in {where}; pass --registry to print its arenas' empty boards"
    reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))
    return f"no valid vote in {where} (skipped: {reasons}; the log above says why)"


def _not_vote_files(paths, most: int = 3) -> list[str]:
    """A few of the files in the folders of ``paths`` that a folder's reading leaves out."""
    paths = paths if isinstance(paths, list | tuple) else [paths]
    folders = [Path(p) for p in paths if p and "://" not in str(p) and Path(p).is_dir()]
    found = [str(f) for folder in folders for f in unread_in_folder(folder)]
    return [*found[:most], "..."] if len(found) > most else found


def _titles(registry, arena_id: str) -> dict[str, str]:
    """Model id -> display name from the registry (empty without one: names are the ids)."""
    if registry is None:
        return {}
    return {m.id: m.name for m in registry.arena(arena_id).models}
