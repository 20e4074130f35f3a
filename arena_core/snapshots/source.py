"""``leaderboard --repo ID --revision SHA``: replay one revision of the published vote dataset.

The command line delegates here: :func:`add_options` adds ``--repo`` and ``--revision``,
:func:`resolve` downloads that revision's vote files and registry (only ``data/**`` and
``registry/**``) and points ``--votes`` and, unless given, ``--registry`` at them, and
:func:`document` is the JSON the command prints: the board's own fields (unchanged for
existing readers) plus ``revision``, ``code_version`` and ``settings``, the same blocks the
Space writes in its daily snapshots.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from arena_core.leaderboard import Board, BoardParams
from arena_core.snapshots.revision import Revision, board_settings, file_sha256
from arena_core.snapshots.version import code_version
from arena_core.window import Window

log = logging.getLogger(__name__)


def hub_api():
    """The Hub client (imported here: it is slow to import and only ``--repo`` needs it)."""
    from huggingface_hub import HfApi

    return HfApi(token=os.environ.get("HF_TOKEN") or None)


#: Builds the Hub client; tests replace it with a local stand-in (the Hub is out of reach).
API_FACTORY: Callable[[], object] = hub_api


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--repo`` and ``--revision`` of ``leaderboard``."""
    parser.add_argument("--repo", help="a Hub dataset repo of votes (instead of --votes): its "
                        "vote files and published registry are downloaded")  # fmt: skip
    parser.add_argument("--revision", help="with --repo: the commit (or branch, tag) to replay; "
                        "default main. The printed revision names the commit")  # fmt: skip


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    """Check ``--votes``/``--repo``; with ``--repo``, download the revision and point
    ``args.votes`` (and ``args.registry``, unless given) at it. Sets ``args.hub`` to the
    Hub fields of the revision (empty for local votes)."""
    args.hub = {}
    if args.repo is None:
        if args.revision is not None:
            raise ValueError("--revision needs --repo")
        if not args.votes and not getattr(args, "counts", None):
            raise ValueError("give --votes PATH, --repo ID or --counts FILE")
        return args
    if args.votes:
        raise ValueError("give --votes or --repo, not both")
    from arena_core.dataset.card import REGISTRY_DIR
    from arena_core.dataset.repo import download_revision
    from arena_core.dataset.uploader import DATA_DIR

    args.download = tempfile.TemporaryDirectory(prefix="arena-revision-")  # lives with args
    revision = args.revision or "main"
    try:
        folder, sha = download_revision(API_FACTORY(), args.repo, revision,
                                        Path(args.download.name))  # fmt: skip
    except Exception as exc:  # the Hub's client raises HTTP, offline, DNS and OS errors alike
        raise ValueError(f"could not download {args.repo} at {revision}: "
                         f"{type(exc).__name__}: {exc}") from exc  # fmt: skip
    args.votes = [str(folder / DATA_DIR)]
    (folder / DATA_DIR).mkdir(parents=True, exist_ok=True)  # a repo without votes yet
    published = folder / REGISTRY_DIR / "registry.yaml"
    if args.registry is None and published.is_file():
        args.registry = str(published)
    # Whether the replay's registry is the one the commit published (False: another was
    # given, or the commit holds none), as the Space's boards say of theirs.
    same = published.is_file() and file_sha256(Path(args.registry)) == file_sha256(published)
    args.hub = {"repo": args.repo, "commit": sha, "unpushed": 0, "registry_published": same}
    if not same:
        log.warning("%s at %s does not hold the registry replayed with (%s): the revision "
                    "says registry_published: false", args.repo, sha, args.registry)  # fmt: skip
    log.info("replaying %s at %s", args.repo, sha)
    return args


def document(board: Board, revision: Revision, params: BoardParams, args) -> dict:
    """The board's JSON with where it came from: ``revision``, ``code_version``, ``settings``."""
    settings = board_settings(params, arena=board.arena, category=board.category,
                              window=Window.parse(args.since, args.until),
                              unavailable=args.unavailable,
                              registry_sha256=file_sha256(args.registry))  # fmt: skip
    return board_document(board, revision, settings)


def board_document(board: Board, revision: Revision, settings: dict) -> dict:
    """The JSON of a board that says where it came from, the same from the CLI and from the
    Space's API: the board's own keys, then ``revision``, ``code_version``, ``settings``."""
    return {**board.to_json(), "revision": revision.to_json(),
            "code_version": code_version().to_json(), "settings": settings}  # fmt: skip


#: The blocks :func:`document` adds to :meth:`Board.to_json`'s keys, which are unchanged.
PROVENANCE_KEYS = ("revision", "code_version", "settings")


def board_part(document: dict) -> dict:
    """A printed board without the blocks :func:`document` added: :meth:`Board.to_json`'s
    keys only, to compare the numbers of two boards computed from different sources."""
    return {k: v for k, v in document.items() if k not in PROVENANCE_KEYS}
