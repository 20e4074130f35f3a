"""Where the votes are, for the engines that read Parquet themselves (DuckDB, Spark).

A local file, folder or glob is listed the way :func:`~arena_core.votes.read.vote_files`
lists it (same files, same order: the order decides which of two rows with the
same ``vote_id`` and time is kept; a JSONL file among them sends the board to the
in-process reader). A remote folder or pattern
(``hf://datasets/<owner>/<repo>[@<revision>]/<path>``, ``s3://``, ``gs://``) is
handed to the engine, which lists it; its files are then put in the same order. A
remote folder is read as its Parquet files only: the damaged lines a push keeps beside
its Parquet file (``<shard>-<n>.damaged.jsonl``) are not, so :func:`parquet_only_gap`
says what the skip counts then leave out, and what reads them.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.votes.parquet_verdict import open_checked, read_checked
from arena_core.votes.read import vote_files
from arena_core.votes.reasons import UNREADABLE
from arena_core.votes.schema import ARROW_SCHEMA

log = logging.getLogger(__name__)

#: URL schemes read by the engines themselves (DuckDB's httpfs extension, Spark's Hadoop FS).
REMOTE_SCHEMES = ("hf://", "s3://", "s3a://", "gs://", "gcs://", "az://", "abfss://", "http://",
                  "https://")  # fmt: skip
#: A Hub dataset path: hf://datasets/owner/repo, an optional @revision, then a path.
_HF = re.compile(
    r"^hf://datasets/(?P<owner>[^/@]+)/(?P<repo>[^/@]+)(?:@(?P<rev>[^/]+))?(?P<path>/.*)?$"
)
_GLOB = re.compile(r"[*?\[]")


class SourceError(ValueError):
    """Votes an engine cannot read (a JSONL file, an unknown URL): the message says what to use."""


#: Kinds of :func:`odd_columns`: a column whose type holds no value, a floating column
#: where the contract has integers (whole values: checked), and an unsigned 64-bit one
#: (values below ``2**63``: checked).
EMPTY, FLOATING, UNSIGNED = "empty", "floating", "unsigned"


def odd_columns(path: str, columns, skipped: Counter) -> tuple[tuple[str, str], ...] | None:
    """Check a local Parquet file by the verdict of ``read_votes``, reached from all its
    contract columns (:mod:`~arena_core.votes.parquet_verdict`): None if the file is
    refused (logged, and counted in ``skipped`` as unreadable), else those of ``columns``
    an engine reading with the contract's types must treat itself, with their kind:
    :data:`EMPTY`, a type that holds no value (Arrow's null type, or a list of it: what
    pyarrow infers for a column null or ``[]`` in every row), to add as typed nulls,
    :data:`FLOATING`, a floating column where the contract has integers (what pandas makes
    of an integer column holding a null), to read as such and cast, and :data:`UNSIGNED`,
    an unsigned 64-bit column where the contract has integers (Spark refuses to read it
    as a signed one), likewise."""
    try:
        parquet, schema = open_checked(path)
        read_checked(parquet, schema)
    except (OSError, pa.ArrowException, ValueError, RecursionError) as exc:
        log.error("skipping unreadable vote file %s: %s", path, exc)
        skipped[UNREADABLE] += 1
        return None
    finally:
        # The engine reads the file next, with its own memory: hand back the check's.
        pa.default_memory_pool().release_unused()
    odd = []
    for name in columns:
        if name not in schema.names:
            continue
        have, want = schema.field(name).type, ARROW_SCHEMA.field(name).type
        if pa.types.is_null(have) or (pa.types.is_list(have) and pa.types.is_null(have.value_type)):
            odd.append((name, EMPTY))
        elif pa.types.is_floating(have) and pa.types.is_integer(want):
            odd.append((name, FLOATING))
        elif have == pa.uint64() and pa.types.is_integer(want):
            odd.append((name, UNSIGNED))
    return tuple(odd)


def has_columns(path: str) -> bool:
    """Whether a local Parquet file holds a column. One without any (what
    ``pd.DataFrame().to_parquet`` writes) holds no row either: ``read_votes`` reads nothing
    from it, while DuckDB refuses to open it ("Need at least one non-root column") and
    stopped every counts path of the folder. The engines leave such a file out."""
    return bool(pq.read_schema(path).names)


@dataclass(frozen=True)
class Sources:
    """Local Parquet files and patterns (globs, remote folders), in the order given.

    ``items`` holds ``(text, is_pattern)``; an engine expands each pattern (in
    :func:`file_order`) where it stands, so the files keep the order of the arguments.
    """

    items: tuple[tuple[str, bool], ...] = ()
    #: The remote folders among the arguments, as given: read as their Parquet files only.
    folders: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(text for text, pattern in self.items if not pattern)

    @property
    def patterns(self) -> tuple[str, ...]:
        return tuple(text for text, pattern in self.items if pattern)

    @property
    def remote(self) -> bool:
        return any(is_remote(p) for p in self.patterns)


def is_remote(path: str) -> bool:
    return str(path).startswith(REMOTE_SCHEMES)


def hf_pattern(url: str) -> str:
    """A Hub dataset folder or file as a Parquet pattern DuckDB reads (every Parquet file
    under a folder). Raises :class:`SourceError` for a model or Space repo, or a bad path."""
    match = _HF.match(url)
    if match is None:
        raise SourceError(f"{url!r}: a vote dataset on the Hub is hf://datasets/<owner>/<repo>"
                          "[@<revision>][/<folder or file>]")  # fmt: skip
    return remote_pattern(url)


def remote_pattern(url: str) -> str:
    """A remote folder as every Parquet file under it; a file or glob as given."""
    if url.endswith(".parquet") or _GLOB.search(url):
        return url
    if url.endswith((".jsonl", ".json")):
        raise SourceError(f"{url}: the duckdb and spark engines read Parquet only; use "
                          "--engine python for JSONL and FastChat exports")  # fmt: skip
    return url.rstrip("/") + "/**/*.parquet"


def resolve(paths) -> Sources:
    """Sort ``paths`` into local files and patterns; refuse what the engines cannot read."""
    if isinstance(paths, str | Path):
        paths = [paths]
    items: list[tuple[str, bool]] = []
    folders: list[str] = []
    for raw in paths:
        text = str(raw)
        if is_remote(text):
            pattern = hf_pattern(text) if text.startswith("hf://") else remote_pattern(text)
            items.append((pattern, True))
            if pattern != text:  # a folder, read as every Parquet file under it
                folders.append(text)
        else:  # a file, a folder, or a local glob (expanded as read_votes expands it)
            for path, kind in vote_files(text):
                if kind != "parquet":
                    raise SourceError(f"{path}: the duckdb and spark engines read Parquet only; "
                                      "use --engine python for JSONL and FastChat exports")  # fmt: skip
                items.append((str(Path(path).resolve()), False))
    return Sources(tuple(items), tuple(folders))


def parquet_only_gap(sources: Sources) -> str | None:
    """What a read of ``sources``' remote folders leaves out, for a warning (None if none).

    A push keeps the damaged lines of its shard beside its Parquet file, as they are
    (``<shard>-<n>.damaged.jsonl``), so that a replay of the repo skips and counts them as
    the Space did. The engines read Parquet only and cannot list a remote folder's other
    files, so their ``skipped`` leaves those lines out: the votes are the same (a damaged
    line is never a vote), the skip counts may be fewer than the Space's board shows.
    """
    if not sources.folders:
        return None
    return (f"{', '.join(sources.folders)}: only the Parquet files are read; damaged lines "
            f"pushed beside them ({DAMAGED_FILES}), if any, are not, so the skip counts leave "
            f"them out (the votes counted are the same). For the skip counts the Space shows, "
            f"{'; '.join(_full_replay(url) for url in sources.folders)}")  # fmt: skip


#: How a push names the damaged lines it keeps beside its Parquet file.
DAMAGED_FILES = "*.damaged.jsonl"


def _full_replay(url: str) -> str:
    """The command that replays every file of the remote folder ``url``, damaged ones too."""
    match = _HF.match(url)
    if match is None:
        return f"download {url} and read it with --engine python"
    revision = f" --revision {match['rev']}" if match["rev"] else ""
    return f"replay it in-process: leaderboard --repo {match['owner']}/{match['repo']}{revision}"


def file_order(names) -> list[str]:
    """Files in the order ``vote_files`` gives a folder's (by path parts), for expanded patterns."""
    return sorted(names, key=lambda name: PurePosixPath(name).parts)


def local_bytes(sources: Sources) -> int:
    """Bytes of the local files (patterns count as unknown: 0)."""
    return sum(Path(f).stat().st_size for f in sources.files if Path(f).exists())
