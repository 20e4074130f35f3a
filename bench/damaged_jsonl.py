"""Benchmark: a JSONL vote log with scattered damaged lines against the same log clean.

    python bench/damaged_jsonl.py                       # 200,000 votes, one file (issue 16)
    python bench/damaged_jsonl.py --votes 1000000 --shards 4 --data /tmp/damaged-bench

Writes a synthetic log (bench/synth.py) as JSONL, and a copy with ``--share`` of its
lines damaged at random (cut short, a wrong type, a list, a byte that is not UTF-8, in
turn); with ``--data`` once, reused by later runs. Then, in fresh processes, taking turns
so that both see the same load (the machine may be shared), ``--repeat`` times each: the
read alone (``read_votes`` as the leaderboard calls it, timed inside the process, after
the imports) and the whole CLI (``python -m arena_core leaderboard ... --format json``).
Prints the median wall and CPU seconds, the damaged / clean ratios (issue 16's target:
1.5 at most), the load average before and after, and checks that every run of a log gave
the same board and the damaged log the same ranking as the clean one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from runs import comparable, timed_run  # noqa: E402
from synth import damage_jsonl, simulate, write_jsonl  # noqa: E402

ARENA = "synthetic"
READ_PROBE = """
import json, sys, time
sys.path.insert(0, {root!r})
from arena_core.leaderboard import BOARD_COLUMNS
from arena_core.votes.read import read_votes
wall, cpu = time.perf_counter(), time.process_time()
votes = read_votes({folder!r}, columns=BOARD_COLUMNS)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps([wall, cpu, len(votes), dict(sorted(votes.skipped.items()))]))
"""


def make_data(args, data: Path) -> None:
    """Write the clean and the damaged log under ``data`` unless a run with the same
    settings did."""
    stamp = data / "settings.json"
    settings = {"votes": args.votes, "shards": args.shards, "share": args.share,
                "seed": args.seed, "version": 1}  # fmt: skip
    if stamp.exists() and json.loads(stamp.read_text()) == settings:
        return
    for old in ("jsonl", "damaged"):  # write_jsonl appends: start from nothing
        shutil.rmtree(data / old, ignore_errors=True)
    frames, _ = simulate(args.votes, 20, args.seed)
    write_jsonl(frames, data / "jsonl", shards=args.shards)
    for shard in sorted((data / "jsonl").glob("*.jsonl")):
        damage_jsonl(shard, data / "damaged" / shard.name, args.share, args.seed)
    stamp.write_text(json.dumps(settings))


def run(args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of a fresh process running ``args``, and its stdout."""
    return timed_run(args, ROOT)


def measure(data: Path, repeat: int) -> dict:
    """Per log ("jsonl", "damaged"): the read's and the whole CLI's (wall, CPU) of each
    run, the read's votes and skips, and the CLI's boards (without what differs from run to
    run: bench/runs.py's ``comparable``)."""
    found = {
        k: {"read": [], "cli": [], "outputs": set(), "boards": []} for k in ("jsonl", "damaged")
    }
    for _ in range(repeat):
        for kind, seen in found.items():
            folder = str(data / kind)
            code = READ_PROBE.format(root=str(ROOT), folder=folder)
            wall, cpu, votes, skipped = json.loads(run([sys.executable, "-c", code])[2])
            seen["read"].append((wall, cpu))
            seen["outputs"].add(json.dumps([votes, skipped]))
            wall, cpu, out = run([sys.executable, "-m", "arena_core", "leaderboard", "--votes",
                                  folder, "--arena", ARENA, "--format", "json"])  # fmt: skip
            seen["cli"].append((wall, cpu))
            seen["boards"].append(comparable(out))
    return found


def median(pairs, k: int) -> float:
    return statistics.median(p[k] for p in pairs)


def table(found: dict, args) -> list[tuple[str, str, str]]:
    rows = []
    clean, damaged = found["jsonl"], found["damaged"]
    for stage, label in (("read", "read_votes alone"), ("cli", "whole CLI")):
        for kind, seen in (("clean", clean), (f"{args.share:.1%} of lines damaged", damaged)):
            rows.append((f"{label}, {kind}", f"{median(seen[stage], 0):.3f}",
                         f"CPU {median(seen[stage], 1):.2f} s"))  # fmt: skip
        ratio = [median(damaged[stage], k) / median(clean[stage], k) for k in (0, 1)]
        rows.append((f"{label}: damaged / clean", f"{ratio[0]:.2f}x", f"CPU {ratio[1]:.2f}x"))
    for kind, seen in found.items():
        votes, skipped = json.loads(next(iter(seen["outputs"])))
        rows.append((f"{kind}: votes read, skipped", f"{votes:,}", json.dumps(skipped)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--share", type=float, default=0.002)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, help="keep the logs here and reuse them")
    args = parser.parse_args()
    data = args.data or Path(f"/tmp/damaged-jsonl-{args.votes}")
    make_data(args, data)
    load_before = os.getloadavg()[0]
    found = measure(data, args.repeat)
    load_after = os.getloadavg()[0]
    for kind, seen in found.items():
        if len(seen["outputs"]) != 1 or len(set(seen["boards"])) != 1:
            raise RuntimeError(f"the runs on the {kind} log disagree")
    ranks = [[r["model_id"] for r in json.loads(found[k]["boards"][0])["rows"]] for k in found]
    print(f"{args.votes:,} votes in {args.shards} JSONL file(s), median of {args.repeat} fresh "
          f"processes each, taking turns; load average {load_before:.2f} before, "
          f"{load_after:.2f} after; same ranking damaged and clean: {ranks[0] == ranks[1]}",
          end="\n\n")  # fmt: skip
    print("| stage | seconds | note |\n|---|---:|---|")
    for row in table(found, args):
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
