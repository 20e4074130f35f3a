"""Compaction: roll many small vote files into one Parquet file per month.

A Space pushes a small file every few minutes, and every restart starts new
shards; over a year that is tens of thousands of files. Compaction reads the
files that are old enough to be finished, writes their votes as
``compacted/<YYYY-MM>/part-<digest>.parquet`` (zstd, in replay order), reads
what it wrote back, and deletes a source only once every one of its votes is
accounted for. It never loses a vote and never writes one twice:

* files younger than ``min_age``, and files a running process holds (a VoteLog's
  shard, the local copy of the votes an uploader adopted until their push lands, see
  :mod:`~arena_core.votes.hold`), are left alone (a live process may still write or
  re-push them);
* a file with any unreadable row is left in place, whole, and reported;
* duplicates of a ``vote_id`` are written once (readers keep the first row anyway);
* a vote an existing monthly file already holds with the same row is not written again,
  and its source is removed all the same. The Space retries a push whose answer was lost
  under the same name with the same and newer lines; if the first copy had landed and
  been compacted meanwhile, the retry brings its votes back. Only ``counted`` and
  ``count_reason`` may differ (the monthly file carries the replay's verdict);
* a source holding a vote id that a monthly file holds with another row (a forged or
  damaged copy, at the same time or another) stays where it is, with the reason: written,
  both rows would sit in the monthly files for good, the copy stamped with the verdict of
  the row that counts. Rows with one vote id in sources rolled up together follow the
  conflict rule of :func:`_layout_changes`.

Afterwards ``compacted/MANIFEST.json`` names every monthly file with its digest and
what was proved of its rows, so the DuckDB engine need not prove it again at every
read (:mod:`~arena_core.scale.manifest`).

The monthly files carry the replay's verdict in ``counted`` and ``count_reason``
(:mod:`~arena_core.dataset.verdict`), worked out over every vote in ``folder`` at the
time of compaction, not just the files rolled up: the flags the writer knew, plus the
votes of every voter the anomalous-voter test has flagged by then. The pushed files
keep the writer's verdict; a voter flagged after their votes were compacted is not
written back into the monthly files (they are never rewritten), which is why the
card points to :func:`~arena_core.dataset.verdict.replay_verdict` for the verdict of
any later revision.

Existing ``compacted/`` parts are never rewritten, so running it twice, or
while the Space pushes, is safe. Two runs at once on one folder are not: each would read
the sources before the other wrote, and write the same votes into a part of its own. So a
run holds an exclusive ``flock`` on the folder itself (no file is made) and a second one
is refused (:class:`CompactionBusyError`), nothing done.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena_core.dataset.verdict import with_verdict
from arena_core.votes.clean import VoteTable
from arena_core.votes.hold import ADOPTED_PREFIX, hold_file, shard_in_use
from arena_core.votes.parquet import parquet_bytes, write_atomically
from arena_core.votes.read import read_votes, vote_files
from arena_core.votes.reasons import DUPLICATE

log = logging.getLogger(__name__)

#: Folder (under the vote folder) that holds the monthly files.
COMPACTED = "compacted"
#: Default minimum age, in minutes, of a file before it is compacted.
MIN_AGE_MINUTES = 60.0
#: Columns a monthly file rewrites with the replay's verdict: not part of a vote's identity.
VERDICT = ("counted", "count_reason")


class CompactionError(RuntimeError):
    """What was written does not match what was read; nothing was deleted."""


class CompactionBusyError(CompactionError):
    """Another compaction of the same folder is running; this one did nothing."""


def check_min_age(minutes: float) -> float:
    """``minutes`` if it is a minimum age (finite, 0 or more), else ValueError: ``nan`` or a
    negative age made every file old enough, so a file a live process was still writing
    was rolled up and deleted."""
    if not math.isfinite(minutes) or minutes < 0:
        raise ValueError(f"--min-age takes minutes, a finite number 0 or more; got {minutes!r}")
    return minutes


@dataclass
class CompactReport:
    rolled: list[Path] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    votes: int = 0
    #: Votes of the rolled sources not written, as a monthly file already held their rows.
    already_compacted: int = 0
    #: The compacted folder's validation manifest, rewritten (None if it could not be).
    manifest: Path | None = None

    def summary(self) -> str:
        kept = "".join(f"\n  kept {name}: {why}" for name, why in sorted(self.kept.items()))
        already = (f"; {self.already_compacted} more were already in monthly files, not "
                   f"written again" if self.already_compacted else "")  # fmt: skip
        return (f"{self.votes} votes from {len(self.rolled)} files written to "
                f"{len(self.written)} monthly files{already}{kept}")  # fmt: skip


def compact(folder: Path, *, min_age_minutes: float = MIN_AGE_MINUTES,
            ages: Mapping[str, float] | None = None, delete: bool = True) -> CompactReport:  # fmt: skip
    """Compact the finished vote files under ``folder`` (see the module docstring).

    ``ages`` (seconds, by path relative to ``folder``) overrides file times: a
    Hub download's files all look new, so the Hub's commit dates are passed in.
    With ``delete=False`` the sources stay (the caller deletes them, e.g. in
    the same Hub commit that adds the monthly files).
    """
    folder = Path(folder)
    check_min_age(min_age_minutes)
    try:
        held = hold_file(folder)  # one run per folder: see the module docstring
    except BlockingIOError:
        raise CompactionBusyError(
            f"another compaction of {folder} is running; nothing done"
        ) from None
    except OSError as exc:  # a file system without flock (ENOLCK on some network mounts)
        log.warning("cannot lock %s (%s): nothing guards it against a second compaction "
                    "meanwhile", folder, exc)  # fmt: skip
        held = None
    try:
        return _compact(folder, min_age_minutes, ages, delete)
    finally:
        if held is not None:
            os.close(held)  # lets go of the lock


def _compact(folder: Path, min_age_minutes: float, ages: Mapping[str, float] | None,
             delete: bool) -> CompactReport:  # fmt: skip
    """:func:`compact`, run while holding the folder."""
    report = CompactReport()
    now = time.time()
    ids: dict[Path, set[str]] = {}  # each source's votes, read once
    for path, _ in vote_files(folder):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(f"{COMPACTED}/"):
            continue
        if not path.exists():  # a dangling link (vote_files lists it: readers count it)
            report.kept[rel] = "a symbolic link to nothing"
            continue
        age = ages.get(rel, 0.0) if ages is not None else now - path.stat().st_mtime
        if age < min_age_minutes * 60:
            report.kept[rel] = f"younger than {min_age_minutes:g} minutes"
            continue
        # A live shard, or an uploader's adopted copy: the only files a process holds (asked
        # of those alone: on a file system without flock, the others compact as before).
        if (path.suffix == ".jsonl" or path.name.startswith(ADOPTED_PREFIX)) and shard_in_use(path):
            report.kept[rel] = "in use by a running process"
            continue
        alone = read_votes(path, columns=["vote_id"])
        damage = {k: v for k, v in alone.skipped.items() if k != DUPLICATE}
        if damage:
            report.kept[rel] = f"unreadable rows {damage}; fix or remove them by hand"
            continue
        ids[path] = set(alone.column("vote_id").to_pylist())
    sources = list(ids)
    if not sources:
        return report
    now_us = time.time_ns() // 1000  # one clock for every read: the same rows are future
    whole = read_votes(folder, now_us=now_us)  # the log the board replays, for the verdict
    parts = sorted(folder.glob(f"{COMPACTED}/*/*.parquet"))
    # A vote_id in a source and a part appears twice in the folder: without one, none is.
    held = read_votes(parts, now_us=now_us) if parts and whole.skipped.get(DUPLICATE) else None
    while sources:
        votes = read_votes(sources, now_us=now_us)
        expected = set().union(*(ids[p] for p in sources))
        if set(votes.column("vote_id").to_pylist()) != expected:  # valid alone, lost together
            raise CompactionError(
                "reading the files together drops votes that each file holds; nothing done"
            )
        before = set(folder.glob(f"{COMPACTED}/*/*.parquet"))
        already = _already_written(votes.table, held.table) if held is not None else set()
        # A vote a monthly file already holds with another row (a forged or damaged copy):
        # written again, both rows would sit in the monthly files for good, each stamped with
        # the verdict of the one that counts. Its source stays, as any conflicting copy.
        clash = _held_ids(votes.table, held.table) - already if held is not None else set()
        if clash:
            stay = [p for p in sources if clash & ids[p]]
            for path in stay:
                report.kept[path.relative_to(folder).as_posix()] = (
                    "holds a vote_id that a monthly file already holds, at the same time with "
                    "other values or at another time: written again, the monthly files would "
                    "hold it twice, so it stays in place"
                )
            sources = [p for p in sources if p not in stay]
            if not sources:
                break
            continue
        fresh = votes.without(already)
        report.written = _write_months(folder / COMPACTED, fresh, whole)
        _verify(fresh, report.written)
        moved = _layout_changes(folder, sources, whole, now_us)
        if not moved:
            break
        # Which of two rows with one vote_id and one ts counts follows the files' order, and
        # the monthly files sort before the shards: such sources stay where they are.
        for path in set(report.written) - before:
            os.remove(path)
        report.written = []
        stay = [p for p in sources if moved & ids[p]]
        for path in stay:
            report.kept[path.relative_to(folder).as_posix()] = (
                "holds a vote_id that another file holds at the same time with other values: "
                "which counts depends on the files' order, so it stays in place"
            )
        sources = [p for p in sources if p not in stay]
    if not sources:
        return report
    report.rolled, report.votes = sources, len(fresh)
    report.already_compacted = len(votes) - len(fresh)
    report.manifest = _manifest(folder / COMPACTED)
    if delete:
        for path in sources:
            os.remove(path)
    log.info("compacted %s", report.summary())
    return report


def _write_months(out: Path, votes: VoteTable, whole: VoteTable) -> list[Path]:
    """Write ``votes`` as one new part per month; an existing part is never replaced.

    A part is named by its vote ids. A source holding exactly a part's ids with other
    rows would get that part's name: its part then takes a name from its bytes as well,
    so the conflict check sees both rows and keeps the source in place, instead of the
    old rows being lost under the new ones.
    """
    months = np.datetime_as_string(votes.ts_us.astype("datetime64[us]").astype("datetime64[M]"))
    written = []
    for month in np.unique(months):
        part = with_verdict(votes.table.filter(pa.array(months == month)), whole)
        data = parquet_bytes(part)
        name = _digest("\n".join(part.column("vote_id").to_pylist()).encode())
        path = out / str(month) / f"part-{name}.parquet"
        if path.exists():
            path = path.with_name(f"part-{name}-{_digest(data)}.parquet")
        written.append(write_atomically(path, lambda f, data=data: f.write(data)))
    return written


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _layout_changes(folder: Path, sources: list[Path], whole: VoteTable, now_us: int) -> set[str]:
    """The vote ids whose counted row differs once ``sources`` are replaced by the monthly
    files just written: a board of the compacted folder must be the board of the folder.

    Two rows with one ``vote_id`` and one ``ts`` but other values (a forged or damaged
    copy) are decided by the files' order, and compaction changes that order. ``counted``
    and ``count_reason`` are left out: the monthly files carry the replay's verdict.
    """
    if not whole.skipped.get(DUPLICATE):  # no vote_id twice: no order can choose another row
        return set()
    gone = {p.resolve() for p in sources}
    after = read_votes([p for p, _ in vote_files(folder) if p.resolve() not in gone],
                       now_us=now_us)  # fmt: skip
    columns = [c for c in whole.table.column_names if c not in VERDICT]
    old, new = whole.table.select(columns), after.table.select(columns)
    if old.equals(new):
        return set()
    old_rows, new_rows = _rows(old), _rows(new)
    return {k for k in old_rows.keys() | new_rows.keys() if old_rows.get(k) != new_rows.get(k)}


def _already_written(votes: pa.Table, parts: pa.Table) -> set[str]:
    """The vote ids of ``votes`` that ``parts`` (the existing monthly files) hold with the
    same row, ``counted`` and ``count_reason`` aside: written again, they would be in the
    dataset twice, and every reader that does not drop repeated ids would count them twice.
    """
    ids = votes.column("vote_id").combine_chunks()
    parts = parts.filter(pc.is_in(parts.column("vote_id"), value_set=ids))
    if not parts.num_rows:
        return set()
    votes = votes.filter(pc.is_in(ids, value_set=parts.column("vote_id").combine_chunks()))
    columns = [c for c in votes.column_names if c not in VERDICT]
    if sorted(columns) != sorted(c for c in parts.column_names if c not in VERDICT):
        return set()
    mine, theirs = _rows(votes.select(columns)), _rows(parts.select(columns))
    return {k for k, row in mine.items() if theirs.get(k) == row}


def _held_ids(votes: pa.Table, parts: pa.Table) -> set[str]:
    """The vote ids of ``votes`` that the existing monthly files hold, whatever their rows."""
    ids = votes.column("vote_id").combine_chunks()
    held = pc.is_in(ids, value_set=parts.column("vote_id").combine_chunks())
    return set(ids.filter(held).to_pylist())


def _rows(table: pa.Table) -> dict[str, str]:
    """Each row by its ``vote_id``, as text that compares rows (repr: NaN equals NaN)."""
    return {row["vote_id"]: repr(row) for row in table.to_pylist()}


def _manifest(compacted: Path) -> Path | None:
    """Rewrite the monthly files' manifest (:mod:`~arena_core.scale.manifest`), so readers
    skip the checks compaction has just made. A failure costs only speed: an older manifest
    still vouches for the parts it names (by their digests), and the new ones are read the
    slow way; the compaction itself stands."""
    from arena_core.scale.manifest import build_manifest  # DuckDB: only compaction needs it

    try:
        return build_manifest(compacted)
    except Exception as exc:  # DuckDB's own errors, among others: the votes are safe
        log.warning("compaction done, but its manifest could not be written: %s", exc)
        return None


def _verify(expected: VoteTable, written: list[Path]) -> None:
    got = read_votes(written, columns=["vote_id"])
    if got.skipped or len(got) != len(expected):
        raise CompactionError(
            f"wrote {len(got)} votes ({dict(got.skipped)}), expected {len(expected)}"
        )
    if set(got.column("vote_id").to_pylist()) != set(expected.column("vote_id").to_pylist()):
        raise CompactionError("the written vote ids differ from the ones read")
