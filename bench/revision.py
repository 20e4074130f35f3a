"""What naming a board's revision costs the Space: ``LiveRevisions`` over a Hub copy and a shard.

Prints, for a Hub copy of N votes (Parquet) and this process's shard of M votes (JSONL),
the first read (every file), a read after one more vote (the shard again), and a read
with nothing new (stat only). Run: ``python bench/revision.py [--hub N] [--shard M]``.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.snapshots.revision import LiveRevisions
from arena_core.votes.log import VoteLog
from arena_core.votes.parquet import write_parquet
from arena_core.votes.schema import FIELDS


def hub_copy(path: Path, n: int) -> None:
    rows = [{"schema_version": 1, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
             "ts": f"2026-10-01T00:00:00.{k % 1000:03d}Z", "arena": "s", "model_a": "x",
             "model_b": "y", "vote": "a", "voter_kind": "human", "flags": []} for k in range(n)]  # fmt: skip
    schema = pa.schema([pa.field(f.name, f.type) for f in FIELDS])
    write_parquet(pa.Table.from_pylist(rows, schema=schema), path)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hub", type=int, default=200_000)
    parser.add_argument("--shard", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hub_copy(Path(tmp) / "hub.parquet", args.hub)
        log = VoteLog(Path(tmp) / "votes")
        log.append_all([{"arena": "s", "model_a": "x", "model_b": "y", "vote": "a"}] * args.shard)
        revisions = LiveRevisions(lambda: [Path(tmp) / "hub.parquet", log.path], log.lock)
        first = timed(lambda: revisions.read(revisions.position()))
        log.append(arena="s", model_a="x", model_b="y", vote="b")
        after_vote = timed(lambda: revisions.read(revisions.position()))
        unchanged = timed(lambda: revisions.read(revisions.position()))
    print(
        f"| Hub copy | shard | first read | after a vote | nothing new |\n|---:|---:|---:|---:|---:|\n"
        f"| {args.hub:,} | {args.shard:,} | {first * 1000:.0f} ms | {after_vote * 1000:.0f} ms "
        f"| {unchanged * 1000:.2f} ms |"
    )


if __name__ == "__main__":
    main()
