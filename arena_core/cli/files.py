"""``python -m arena_core compact`` and ``export``: vote files rolled up or converted.

``compact`` rolls a folder's (or a Hub repo's) vote files into monthly Parquet;
``export`` writes FastChat's clean_battle format. Their modules are imported when
the command runs: a fresh ``leaderboard`` run need not pay for them.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from arena_core.votes.fastchat import to_battles
from arena_core.votes.parquet import write_atomically
from arena_core.votes.read import fastchat_arena_of, read_votes


def add_commands(sub) -> None:
    """Register ``compact`` and ``export`` on the CLI's subparsers."""
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
    comp.set_defaults(run=run_compact)

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
    export.set_defaults(run=run_export)


def run_compact(args) -> int:
    # Imported here, as the Hub client below: the other commands do not need compaction's
    # modules, and a fresh `leaderboard` run paid 0.12 s for them.
    from arena_core.dataset.compact import MIN_AGE_MINUTES, CompactionError, check_min_age, compact

    # Checked before anything is read: with --repo, before the download.
    args.min_age = MIN_AGE_MINUTES if args.min_age is None else check_min_age(args.min_age)
    if args.repo is not None and not args.repo.strip():  # read as no repo: Path(None) was opened
        raise ValueError("compact --repo takes a Hub dataset repo id (owner/name); an empty one "
                         "names none")  # fmt: skip
    if args.votes == "":  # Path("") is the current folder: its shards would be compacted
        raise ValueError("compact --votes takes a vote folder; an empty path names none")
    if args.votes and not Path(args.votes).is_dir():
        what = "is a file" if Path(args.votes).exists() else "does not exist"
        raise ValueError(f"compact --votes takes a vote folder (it writes compacted/ inside it); "
                         f"{args.votes} {what}")  # fmt: skip
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

        token = os.environ.get("HF_TOKEN") or None
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


def run_export(args) -> int:
    # A FastChat export is read into --arena when every file is one, as ``leaderboard``,
    # ``model`` and ``analyze`` read it: ``export --arena`` refused the files whose board
    # the same --arena had just printed (their battles carry no arena, so "fastchat").
    votes = read_votes(args.votes, fastchat_arena=fastchat_arena_of(args.votes, args.arena))
    if args.arena:
        from arena_core.cli.board import require_votes_of

        require_votes_of(votes.table, "arena", args.arena)
    # The whole log: the anomalous-voter test that leaves votes out judges every arena's.
    battles = to_battles(votes, include_flagged=args.include_flagged, arena=args.arena)
    text = json.dumps(battles, ensure_ascii=False, allow_nan=False).encode("utf-8")
    try:
        write_atomically(args.out, lambda f: f.write(text))
    except OSError as exc:  # e.g. a full disk: the error has no file name of its own
        raise OSError(exc.errno, exc.strerror, args.out) from None
    print(f"wrote {len(battles)} battles to {args.out}", file=sys.stderr)
    return 0
