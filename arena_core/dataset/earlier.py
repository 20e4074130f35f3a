"""Local vote files of earlier runs, and the local copy of the repo kept equal to it.

On a machine that keeps its disk, a restart finds the vote files of earlier runs beside
its own new shard, and the copy of the repo it downloaded last time. Each file is in one
of three states, and :class:`EarlierFiles` keeps to these rules:

* **Published**: every line of it is a vote in the downloaded repo, or a damaged line
  that the repo's damaged file of that shard holds as it is (see :func:`readable_ids`). It
  moves to :data:`PUBLISHED_DIR` (kept, but neither replayed nor adopted again). Replayed beside the repo's copy, each of its votes was a skipped
  ``duplicate_vote_id``, so the board's counts differed from ``leaderboard --repo
  --revision <commit>``; adopted again after the operator deleted its votes from the
  repo, they came back. A row the reader skips today keeps the file in place, since
  nothing reads that folder: dated ahead of this clock (a run whose clock was ahead) or
  of a newer schema (a release rolled back), it is adopted by a later start that reads it.
* **Not all on the Hub**: its missing votes are adopted (pushed by this process). When
  every row of it is read or accounted for, those votes are first copied to a local file,
  ``adopted-<digest>.parquet``, the very file that pushes them, and it moves aside as a
  published one: replayed beside the repo's copy, each vote they shared was a skipped
  duplicate for the whole run. The copy is found in the repo by the next start and set
  aside in turn. A file with another skipped row stays, replayed, as before.
* **Held** by a live neighbour (its ``flock``): that process pushes its own. It is
  adopted at the first push after the neighbour let it go: the files the neighbour
  pushed meanwhile are fetched into the local copy of the repo first, and the boards
  replayed (a neighbour that failed its last push and exited left those votes to nobody).

:func:`prune_mirror` makes the local copy exactly the repo's files: ``snapshot_download``
never deletes, so files deleted or compacted on the Hub were replayed at every start.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from arena_core.dataset.uploader import DAMAGED_SUFFIX, adopted_file
from arena_core.votes.clean import VoteTable
from arena_core.votes.hold import shard_in_use
from arena_core.votes.lines import damaged_lines
from arena_core.votes.parquet import contract_table, write_atomically
from arena_core.votes.read import read_listed, read_votes, vote_files
from arena_core.votes.reasons import DUPLICATE, INVALID_JSON, NOT_OBJECT, TRUNCATED, WRONG_TYPE

log = logging.getLogger(__name__)

#: Folder, in the local vote folder, of the earlier files whose votes are all in the repo
#: (hidden: the readers of the vote folder skip it).
PUBLISHED_DIR = ".published"
#: What a read may skip in a file that is still all published: a repeat of a vote id
#: (its first row is the one compared), and a torn last line. The log acknowledges a vote
#: only once its whole line is fsynced, and cuts a failed write back (or ends it with the
#: next write's newline, a damaged line then, not a last one), so a torn last line in a
#: shard no live process holds is a write its process died in: no visitor was told it was
#: saved, no later write completes it (each process writes a shard of its own), and no
#: push sends it (pushes take complete lines only).
ACCOUNTED_SKIPS = frozenset({DUPLICATE, TRUNCATED})
#: What a line is skipped for by itself (:func:`~arena_core.votes.lines.judge_line`): the
#: damaged lines a push sends as they are, in a damaged file beside its Parquet file.
LINE_SKIPS = frozenset({INVALID_JSON, NOT_OBJECT, WRONG_TYPE})


def vote_ids(paths) -> set[str]:
    """The vote ids of the vote files under ``paths`` (none for no paths)."""
    paths = list(paths) if not isinstance(paths, str | Path) else [paths]
    if not paths:
        return set()
    return set(read_votes(paths, columns=["vote_id"]).column("vote_id").to_pylist())


def only(votes: VoteTable, ids: set[str]) -> VoteTable:
    """The votes of ``votes`` whose ``vote_id`` is in ``ids``, in their order."""
    return votes.without(set(votes.column("vote_id").to_pylist()) - ids)


def readable_ids(path: Path, damaged: Counter | None = None) -> set[str] | None:
    """The vote ids of the vote file ``path`` when every row it skips is accounted for, else
    None: the file can go aside once the repo holds those votes.

    Only what :data:`ACCOUNTED_SKIPS` names may be skipped on the way, and damaged lines
    that ``damaged`` holds (the lines of the repo's damaged files of that shard,
    :func:`pushed_damaged_lines`): the repo's replay skips and counts them, so the file,
    replayed beside it, would count them twice, and the board's skip counts would differ
    from ``leaderboard --repo --revision <commit>``. Any other skipped row (dated ahead of
    this clock, of a schema version this release does not know, a damaged line the repo
    lacks, or the whole file unreadable) may be an acknowledged vote that no ``vote_id``
    comparison can vouch for, so the file stays.
    """
    votes = read_votes(path, columns=["vote_id"])
    other = {r: n for r, n in votes.skipped.items() if n and r not in ACCOUNTED_SKIPS}
    if other and not (other.keys() <= LINE_SKIPS and _damaged_pushed(path, other, damaged)):
        return None
    return set(votes.column("vote_id").to_pylist())


def _damaged_pushed(path: Path, skipped: dict[str, int], pushed: Counter | None) -> bool:
    """Whether the line skips of the vote file ``path`` (``skipped``) are its damaged complete
    lines (a torn last line is never pushed, nor a whole one without its newline), each
    among ``pushed`` as many times as the file holds it."""
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)  # as the readers read a file
    lines = Counter(damaged_lines(data[: data.rfind(b"\n") + 1]))
    return lines.total() == sum(skipped.values()) and lines <= (pushed or Counter())


def pushed_damaged_lines(hub_votes: Path, shard_stem: str) -> Counter:
    """The lines of the damaged files the shard ``shard_stem`` pushed
    (``<shard>-<n>.damaged.jsonl``) in the local copy of the repo's vote files, each as
    the readers read it (a byte-order mark at a file's start is no part of its line)."""
    name = re.compile(re.escape(shard_stem) + r"-\d+" + re.escape(DAMAGED_SUFFIX))
    lines: Counter = Counter()
    for path in sorted(hub_votes.rglob(f"*{DAMAGED_SUFFIX}")):
        if name.fullmatch(path.name):
            data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
            lines.update(raw for raw in data.split(b"\n") if raw.strip())
    return lines


def prune_mirror(mirror: Path, folder: str, listed: Iterable[str],
                 also: Iterable[str] = ()) -> set[str]:  # fmt: skip
    """Delete the files of ``mirror/folder``, and those of ``also`` (repo paths), that the
    repo does not list (``listed``: repo paths at the downloaded commit); returns the vote
    ids they held. The card is one of ``also``: it is published again only when it differs
    from the local copy, so a card deleted on the Hub, left here, never came back.

    Those votes were in the repo and were taken out (a forged file deleted by the
    operator), or moved (a compaction: then they are in its new file too). Either way
    no earlier local file holding them may push them again (:meth:`EarlierFiles.connect`).
    """
    root = mirror / folder
    listed = set(listed)
    stale = [p for p in sorted(root.rglob("*"))
             if p.is_file() and p.relative_to(mirror).as_posix() not in listed]  # fmt: skip
    withdrawn = vote_ids(p for p in stale if p.suffix in (".jsonl", ".parquet"))
    stale += [mirror / rel for rel in also if rel not in listed and (mirror / rel).is_file()]
    for path in stale:
        path.unlink()
    if stale:
        log.info("removed %d files the repo no longer holds from its local copy", len(stale))
    return withdrawn


class EarlierFiles:
    """The earlier vote files of one process's vote folder (see the module docstring).

    ``votes_dir`` and ``shard``: the folder and this process's own shard in it;
    ``hub_votes``: the local copy of the repo's vote files.
    """

    def __init__(self, votes_dir: Path, shard: str, hub_votes: Path):
        self.votes_dir, self.shard, self.hub_votes = votes_dir, shard, hub_votes
        #: Files a live neighbour held at connect, adopted once it lets them go.
        self.held: list[Path] = []
        #: Votes of :attr:`held` not in the repo's copy: on the board, perhaps not on the Hub.
        self.held_votes = 0
        self._withdrawn: set[str] = set()

    def connect(self, uploader, withdrawn: set[str]) -> None:
        """Adopt the votes of the free earlier files that the repo lacks, and set aside those
        it holds, before the replay; ``withdrawn`` are the vote ids :func:`prune_mirror`
        took out of the copy (published once: never pushed again)."""
        held: list[Path] = []

        def free() -> list[Path]:  # listed again if a compaction moves the files meanwhile
            held.clear()
            files = [p for p, _ in vote_files(self.votes_dir) if p.name != self.shard]
            held.extend(p for p in files if shard_in_use(p))  # a live neighbour pushes its own
            return [p for p in files if p not in held]

        earlier, votes = read_listed(free)
        self._withdrawn = withdrawn
        if not earlier and not held:
            return
        published, held_votes = self._tally(held)
        self.held, self.held_votes = held, held_votes
        queued, aside = self._adopt(uploader, earlier, votes, published)
        log.info("earlier local vote files: %d adopted (%d of their votes not on the Hub yet), "
                 "%d set aside as published, %d held by a live process",
                 len(earlier), queued, aside, len(held))  # fmt: skip

    def released(self, uploader, fetch: Callable[[list[str]], object]) -> bool:
        """At each push: adopt the held files whose process has let them go, as at connect;
        True if any was let go. ``fetch(stems)`` adds to the local copy of the repo the files
        those processes pushed themselves (file names start with their shard's stem), which
        the copy downloaded at connect may lack.

        The caller then replays every file again: the board read a held shard as it was at
        start-up, while its process went on taking and pushing votes. Left as it was, the
        board lacked those votes and skipped each vote the shard shared with the repo's
        copy as a duplicate, while it named a commit that held every one of them once."""
        held = self.held
        released = [p for p in held if not shard_in_use(p)]
        if not released:
            return False
        remaining = [p for p in held if p not in released]
        # This process's own pushes too: a file it held itself was its shard, renamed in the
        # folder, whose votes it pushed under its own shard's name (counted twice before).
        fetch([p.stem for p in released] + [Path(self.shard).stem])
        published, held_votes = self._tally(remaining)
        files, votes = read_listed(lambda: [p for p in released if p.exists()])
        queued, aside = self._adopt(uploader, files, votes, published)
        self.held, self.held_votes = remaining, held_votes  # after adopt: never under-counted
        log.info("adopted %d vote files a process left; %d of their votes were not on the Hub, "
                 "%d files set aside as published", len(files), queued, aside)  # fmt: skip
        return True

    def _adopt(self, uploader, files: list[Path], votes, published: set[str]) -> tuple[int, int]:
        """Queue the votes of ``files`` (read together: ``votes``) not in ``published``, and
        set aside the files the repo then holds whole; the votes queued and files set aside.

        The votes of the files every row of which is read or accounted for are copied to a
        local file first (:meth:`_copy_missing`) and pushed as that very file (one
        adoption), so their files go aside; the others' as another adoption, as before."""
        whole = self._readable(files)
        copied, copy = self._copy_missing(votes, whole, published)
        # Each adoption locks the files its votes stay in until they are pushed (see
        # VoteUploader.adopt): the copy, or the files that are not set aside.
        queued = uploader.adopt(only(votes, copied), published, hold=[copy]) if copied else 0
        kept = [p for p in files if p not in whole]
        queued += uploader.adopt(votes.without(copied), published, hold=kept)
        aside = self._set_aside({p: i for p, i in whole.items() if p != copy},
                                published | copied)  # fmt: skip
        return queued, aside

    def _tally(self, held: list[Path]) -> tuple[set[str], int]:
        """The vote ids counted as published, and how many votes of ``held`` are not among
        them (:attr:`held_votes`). Published: the repo's copy and the ids
        :func:`prune_mirror` withdrew."""
        published = vote_ids(self.hub_votes) | self._withdrawn
        return published, len(vote_ids(held) - published)

    def _readable(self, files: list[Path]) -> dict[Path, set[str]]:
        """Each of ``files`` every row of which is read or accounted for (see
        :func:`readable_ids`: the repo's copy holds its damaged lines), with its vote ids."""
        whole = {}
        for path in files:
            try:
                ids = readable_ids(path, pushed_damaged_lines(self.hub_votes, path.stem))
            except FileNotFoundError:  # compacted meanwhile: its part is looked at next time
                continue
            if ids is not None:
                whole[path] = ids
        return whole

    def _copy_missing(self, votes, whole: dict[Path, set[str]],
                      published: set[str]) -> tuple[set[str], Path | None]:  # fmt: skip
        """Write the votes of the ``whole`` files (:meth:`_readable`) that the repo lacks into
        a local copy of the file that pushes them (:func:`adopted_file`); their ids, and it.

        Their files can then be set aside like the published ones. Replayed in place
        beside the repo's copy, every vote such a file shared with the repo (a run whose
        last push failed) was a skipped ``duplicate_vote_id`` on the board for the whole
        run, while ``leaderboard --repo --revision`` of the commit that the board named
        once the missing votes were pushed skipped none. The copy is the pushed file, so
        the next start finds it in the repo and sets it aside too. If it cannot be written
        the files stay in place (as before) and nothing is lost.
        """
        table = contract_table(only(votes, set().union(*whole.values()) - published).table)
        if not table.num_rows:
            return set(), None
        name, data = adopted_file(table)
        try:
            path = write_atomically(self.votes_dir / name, lambda f: f.write(data))
        except OSError as exc:
            log.error("could not copy the earlier votes the repo lacks to %s (%s): their "
                      "files stay in place", self.votes_dir / name, exc)  # fmt: skip
            return set(), None
        return set(table.column("vote_id").to_pylist()), path  # what the copy holds, no more

    def _set_aside(self, files: dict[Path, set[str]], published: set[str]) -> int:
        """Move the files (:meth:`_readable`, with their vote ids) every vote of which is in
        ``published`` to :data:`PUBLISHED_DIR`."""
        moved = 0
        for path, ids in files.items():
            try:
                if not ids <= published:
                    continue
                target = self.votes_dir / PUBLISHED_DIR / path.relative_to(self.votes_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
            except FileNotFoundError:  # compacted meanwhile: its part is looked at next time
                continue
            moved += 1
        return moved
