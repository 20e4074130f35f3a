"""The validation manifest of compacted monthly files: checks paid once, at compaction.

At 100M votes most of DuckDB's time is spent proving what compaction already
proved: every timestamp matches the pattern and parses, no ``vote_id`` repeats
(the rows must be hashed and grouped, 100M distinct keys). Compacted parts are
never rewritten, so compaction writes ``compacted/MANIFEST.json`` naming each
part it validated:

* the part's SHA-256 and size, so a part edited or replaced since is noticed
  (the digest is checked at every read, about 1 s per GB on two cores) and read
  the slow way, as is every file the manifest does not name;
* the fingerprint of the rules it was judged by (:func:`rules_fingerprint`: the
  reason chain's SQL and the columns), so a release that changes a rule
  ignores every older manifest;
* the part's latest timestamp, so a reader whose clock is earlier (a replay
  "as of" a date) judges its rows itself; and the length of its timestamps
  when they are all UTC (``...Z``) and of one length: then text order is time
  order, and a group's first and last vote are found without parsing each row;
* the duplicate groups among the parts (every row of each repeated
  ``vote_id``, with its time), so a reader given any subset of the parts still
  keeps the same row the full replay keeps.

A row of a file the manifest does not name (the tail, not yet compacted) can
repeat an id of a part: the engine looks those ids up in the parts and ranks
every row that shares them exactly, ignoring the manifest's groups for them
(see :class:`~arena_core.scale.duck.DuckVotes`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from arena_core.scale.rules import DUCKDB, READ_COLUMNS, flagged_sql, reason_sql, ts_us_sql
from arena_core.scale.sources import is_remote
from arena_core.snapshots.revision import file_sha256
from arena_core.votes.parquet import write_atomically

log = logging.getLogger(__name__)

#: File name of the manifest, in the ``compacted/`` folder it describes.
MANIFEST_NAME = "MANIFEST.json"
#: Version of the manifest's layout.
MANIFEST_VERSION = 1


def rules_fingerprint() -> str:
    """A digest of the rules rows are judged by: changing any rule changes it."""
    text = "\n".join([reason_sql(0), ts_us_sql(DUCKDB), flagged_sql(DUCKDB), *READ_COLUMNS])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digests(paths: list[Path]) -> list[str]:
    """:func:`file_sha256` of each path, on every core."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(file_sha256, paths))


@dataclass(frozen=True)
class Trusted:
    """The files of a read the manifests vouch for, as the engine needs them.

    ``ranks`` are the trusted files' places in the engine's file list;
    ``ts_width`` is the common length of their timestamps (all UTC, one length),
    or None; ``groups`` are the duplicate groups among them, each a list of
    ``(rank, row, ts_us)`` with the group's ``vote_id``.
    """

    ranks: tuple[int, ...] = ()
    ts_width: int | None = None
    groups: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...] = field(default=())

    def __bool__(self) -> bool:
        return bool(self.ranks)


def trusted_files(files: list[str], latest_us: int) -> Trusted:
    """Which of ``files`` (the engine's ordered list) a valid manifest vouches for.

    A part is trusted when a manifest beside it (``<part>/../../MANIFEST.json``) is of
    this layout and these rules, names the part with its size and SHA-256, its latest
    vote is not after ``latest_us``, and the trusted parts come in the manifest's order,
    each once (the order breaks ties between duplicates), all under one manifest.
    Anything else is read the slow way.
    """
    entries: dict[int, tuple[Path, dict, int]] = {}  # rank -> (manifest, entry, its index)
    loaded: dict[Path, dict | None] = {}
    for rank, name in enumerate(files):
        if is_remote(name):
            continue
        path = Path(name).resolve()  # one part named two ways is one part
        home = path.parent.parent
        if home not in loaded:
            loaded[home] = _load(home / MANIFEST_NAME)
        manifest = loaded[home]
        if manifest is None:
            continue
        index = manifest["_index"].get(path.relative_to(home).as_posix())
        if index is None:
            continue
        entry = manifest["parts"][index]
        if entry["ts_max_us"] > latest_us or _size(path) != entry["bytes"]:
            continue
        entries[rank] = (home, entry, index)
    if not entries:
        return Trusted()
    ranks = sorted(entries)
    # One manifest's parts at most: a manifest knows the duplicates among its own parts
    # only, so a second vouched folder (a copy of the first, say) is read the slow way,
    # its ids looked up in the trusted parts.
    first = entries[ranks[0]][0]
    if any(entries[r][0] != first for r in ranks):
        log.info("parts of several manifests given; only %s is trusted", first)
        ranks = [r for r in ranks if entries[r][0] == first]
    for home in {entries[r][0] for r in ranks}:
        order = [entries[r][2] for r in ranks if entries[r][0] == home]
        # Strictly increasing: a part given twice (a folder and a glob over it) has
        # duplicates of every vote, which only the slow way finds and drops.
        if order != sorted(set(order)):
            log.info("manifest %s: parts given out of its order or twice; reading them the slow "
                     "way", home)  # fmt: skip
            ranks = [r for r in ranks if entries[r][0] != home]
    found = digests([Path(files[r]) for r in ranks])
    changed = [files[r] for r, d in zip(ranks, found, strict=True) if d != entries[r][1]["sha256"]]
    for name in changed:
        log.warning("%s differs from its manifest entry; its rows are checked one by one", name)
    ranks = [r for r, d in zip(ranks, found, strict=True) if d == entries[r][1]["sha256"]]
    widths = {entries[r][1]["ts_width"] for r in ranks}
    return Trusted(tuple(ranks), widths.pop() if len(widths) == 1 else None,
                   _groups(ranks, entries, loaded))  # fmt: skip


def _groups(ranks, entries, loaded) -> tuple:
    """The manifests' duplicate groups, as engine ranks, keeping the members present."""
    by_part = {(entries[r][0], entries[r][1]["path"]): r for r in ranks}
    groups = []
    for home in {entries[r][0] for r in ranks}:
        for vote_id, members in loaded[home]["duplicates"]:
            present = tuple((by_part[(home, p)], row, ts) for p, row, ts in members
                            if (home, p) in by_part)  # fmt: skip
            if len(present) > 1:
                groups.append((vote_id, present))
    return tuple(groups)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _load(path: Path) -> dict | None:
    """A manifest of this layout and these rules, with an index of its parts; else None."""
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable manifest %s: %s", path, exc)
        return None
    if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
        log.info("ignoring manifest %s: another layout", path)
        return None
    if manifest.get("rules") != rules_fingerprint():
        log.info("ignoring manifest %s: written under other rules", path)
        return None
    if not _well_formed(manifest):
        log.warning("ignoring malformed manifest %s", path)
        return None
    manifest["_index"] = {e["path"]: k for k, e in enumerate(manifest["parts"])}
    return manifest


def _well_formed(manifest: dict) -> bool:
    """Every field the reader uses is there, with its type (a hand-edited file may not be)."""
    parts, groups = manifest.get("parts"), manifest.get("duplicates")
    if not isinstance(parts, list) or not isinstance(groups, list):
        return False
    types = {"path": str, "sha256": str, "bytes": int, "ts_max_us": int}
    for entry in parts:
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), t)
                                                   for k, t in types.items()):  # fmt: skip
            return False
        if entry.get("ts_width") is not None and not isinstance(entry["ts_width"], int):
            return False
    for group in groups:
        if not (isinstance(group, list) and len(group) == 2 and isinstance(group[0], str)
                and isinstance(group[1], list)):  # fmt: skip
            return False
        for member in group[1]:
            if not (isinstance(member, list) and len(member) == 3 and isinstance(member[0], str)
                    and all(isinstance(v, int) for v in member[1:])):  # fmt: skip
                return False
    return True


def build_manifest(compacted: Path, *, now_us: int | None = None) -> Path | None:
    """Validate every part under ``compacted`` with DuckDB and write its manifest.

    Parts with a row the rules refuse are left out (readers judge them row by row);
    returns the manifest's path, or None when there is no part. The whole folder is
    read once, the slow way: this is the cost the manifest saves every later read.
    """
    from arena_core.scale.duck import DuckVotes

    compacted = Path(compacted)
    parts = sorted(p for p in compacted.rglob("*.parquet")
                   if not any(s.startswith(".") for s in p.relative_to(compacted).parts))  # fmt: skip
    if not parts:
        return None
    sums = digests(parts)  # before reading: a part changed meanwhile then fails its check
    duck = DuckVotes(_sources(parts), now_us=now_us, trust_manifest=False)
    stats = _valid_parts(duck, parts)
    kept = [k for k in range(len(parts)) if k in stats]
    if len(kept) < len(parts):  # rare: judge the good parts again, alone (their duplicates)
        for k in sorted(set(range(len(parts))) - set(kept)):
            log.warning("manifest: %s has rows the rules refuse, or cannot be read; left out",
                        parts[k])  # fmt: skip
        if not kept:
            return None
        duck = DuckVotes(_sources([parts[k] for k in kept]), now_us=now_us, trust_manifest=False)
        stats = _valid_parts(duck, parts)
    entries = [
        {"path": parts[k].relative_to(compacted).as_posix(), "sha256": sums[k],
         "bytes": parts[k].stat().st_size, "rows": stats[k][0], "ts_max_us": stats[k][1],
         "ts_width": stats[k][2]}
        for k in kept
    ]  # fmt: skip
    manifest = {"manifest_version": MANIFEST_VERSION, "rules": rules_fingerprint(),
                "parts": entries, "duplicates": _duplicates(duck, entries)}  # fmt: skip
    text = json.dumps(manifest, separators=(",", ":")).encode()
    path = write_atomically(compacted / MANIFEST_NAME, lambda f: f.write(text))
    log.info("manifest: %d parts validated, %d duplicate groups", len(entries),
             len(manifest["duplicates"]))  # fmt: skip
    return path


def _sources(paths: list[Path]):
    from arena_core.scale.sources import Sources

    return Sources(tuple((str(p), False) for p in paths))


def _valid_parts(duck, parts: list[Path]) -> dict[int, tuple[int, int, int | None]]:
    """Parts (by index in ``parts``) whose every row is valid: rows, latest ``ts_us``,
    timestamp width. DuckDB's ranks index the files it kept (an unreadable part is not
    among them), so they are mapped back by path."""
    index = {str(path): k for k, path in enumerate(parts)}
    part_of = [index[name] for name in duck.files]
    rows = duck.con.execute("""SELECT file_rank, count(*), max(ts_us),
            min(length(ts)), max(length(ts)), bool_and(ends_with(ts, 'Z')),
            count(*) FILTER (WHERE reason IS NOT NULL)
        FROM checked GROUP BY file_rank""").fetchall()
    return {part_of[rank]: (n, int(ts), lo if lo == hi and utc else None)
            for rank, n, ts, lo, hi, utc, bad in rows if not bad}  # fmt: skip


def _duplicates(duck, entries: list[dict]) -> list:
    """Every row of each repeated ``vote_id`` among the parts, as ``[path, row, ts_us]``."""
    rows = duck.con.execute("""SELECT vote_id, list([file_rank, row_no, ts_us]
                                  ORDER BY ts_us, file_rank, row_no)
        FROM checked SEMI JOIN dup_hashes d ON hash(vote_id) = d.h
        GROUP BY vote_id HAVING count(*) > 1 ORDER BY vote_id""").fetchall()
    return [[vote_id, [[entries[r]["path"], int(row), int(ts)] for r, row, ts in members]]
            for vote_id, members in rows]  # fmt: skip


__all__ = ["MANIFEST_NAME", "Trusted", "build_manifest", "rules_fingerprint", "trusted_files"]
