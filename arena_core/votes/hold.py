"""Which vote files a live process is using: an exclusive ``flock`` on the file.

A live :class:`~arena_core.votes.log.VoteLog` holds its shard, and a live uploader the
files of its adoptions, so a compaction or a neighbour's start-up leaves them alone. A lock
marks a file, not a name: a file deleted or replaced under its name is compared by device
and inode (:func:`same_file`, :func:`names`).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

#: How an uploader's local copy of adopted votes is named (``adopted-<digest>.parquet``, see
#: :func:`~arena_core.dataset.uploader.adopted_file`): besides a live shard, the one kind of
#: vote file a process holds.
ADOPTED_PREFIX = "adopted-"


def shard_in_use(path: Path) -> bool:
    """Whether a live VoteLog holds this shard (it keeps an exclusive ``flock`` on it), or a
    live uploader a file of its adoptions (:func:`hold_file`)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we may have taken
    return False


def hold_file(path: Path) -> int:
    """Mark ``path`` in use (:func:`shard_in_use`): an exclusive ``flock``, held by the
    returned descriptor until it is closed; OSError if the file is gone or held."""
    held = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(held)
        raise
    return held


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def names(path: Path, fd: int) -> bool:
    """Whether ``path`` still leads to the file ``fd`` is open on."""
    try:
        return same_file(os.stat(path), os.fstat(fd))
    except FileNotFoundError:
        return False
