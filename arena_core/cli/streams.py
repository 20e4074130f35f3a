"""Votes given as a stream: ``--votes -`` (standard input) or a pipe such as ``<(zstdcat
log.jsonl.zst)``, for a researcher whose log is compressed or comes out of another tool.

The readers need a file they can map and read twice (JSONL's pre-scan, Parquet's footer),
so each stream is copied once into a temporary folder that lives as long as the command,
and read from there like any file named on the command line: its format is told by its
first bytes (JSONL, Parquet, a FastChat export), and a still-compressed stream is refused
as a compressed file is. Before, ``-`` was "no vote file or folder" and a pipe was read as
an empty name's folder would not be: ``/dev/stdin`` from a pipe is neither a file nor a
folder, so the reader refused it.
"""

from __future__ import annotations

import contextlib
import shutil
import stat
import sys
import tempfile
from pathlib import Path

#: The name that means standard input, as for most Unix tools.
STDIN = "-"


def is_stream(raw) -> bool:
    """Whether a ``--votes`` entry names a stream rather than a file, folder or pattern:
    ``-``, or an existing path that is a pipe, socket or character device."""
    if str(raw) == STDIN:
        return True
    try:
        mode = Path(raw).stat().st_mode
    except (OSError, ValueError):  # no such path (a pattern, a typo): the reader says so
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.contextmanager
def spooled(args):
    """``args.votes`` with each stream replaced by a temporary copy of what it held, for the
    ``with`` block; the copies are removed after. Commands whose ``--votes`` is one folder
    (``compact``, ``manifest``) are left as they are: a folder cannot come down a pipe."""
    votes = getattr(args, "votes", None)
    if not isinstance(votes, list) or not any(is_stream(v) for v in votes):
        yield args
        return
    if votes.count(STDIN) > 1:
        raise ValueError("--votes names standard input (-) twice; it can be read once")
    with tempfile.TemporaryDirectory(prefix="arena-stream-") as tmp:
        # Named for the stream, as a message naming the file will show it.
        args.votes = [_copy(v, Path(tmp) / ("stdin" if v == STDIN else f"{k}-{Path(v).name}"))
                      if is_stream(v) else v for k, v in enumerate(votes)]  # fmt: skip
        try:
            yield args
        finally:
            args.votes = votes


def _copy(raw, to: Path) -> Path:
    """The stream ``raw`` copied to ``to``. Standard input from a terminal is refused: the
    command would wait for votes typed by hand."""
    if str(raw) == STDIN:
        if sys.stdin is None or sys.stdin.isatty():
            raise ValueError("--votes - reads votes from standard input, which is a terminal; "
                             "pipe a vote file into it (e.g. zstdcat votes.jsonl.zst | ...)")  # fmt: skip
        opened = contextlib.nullcontext(sys.stdin.buffer)  # not closed: it is the process's
    else:
        opened = open(raw, "rb")  # noqa: SIM115 - closed by the with below
    with opened as source, to.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    return to
