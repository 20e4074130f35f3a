"""Before and after: the whole CLI of two code trees, run alternately in fresh processes.

    python bench/ab_cli.py --before /tmp/old-tree --votes /tmp/speed-data/bench/parquet
    python bench/ab_cli.py --before /tmp/old-tree --votes DIR --runs 3 -- --method elo

``--before`` is a copy of an older commit (``git archive COMMIT | tar -x -C DIR``); the
tree this script is in is "after". Each round runs ``python -m arena_core leaderboard
--votes DIR --arena ARENA --format json`` (plus anything after ``--``) once in each tree,
A B A B, so both see the same load on a shared machine; the table gives the median and
range of wall and CPU seconds, the load average at the start and the end, and whether the
outputs were identical byte for byte once the ``code_version`` block (which names each
tree's commit) is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

AFTER = Path(__file__).resolve().parent.parent


def run(tree: Path, args: list[str], env: dict) -> tuple[float, float, str]:
    """Wall and CPU seconds of one fresh process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "arena_core", *args], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def comparable(output: str) -> str:
    """The printed bytes with the ``code_version`` block emptied (each tree names its own
    commit); everything else must match byte for byte."""
    json.loads(output)  # a whole JSON document, or the comparison means nothing
    return re.sub(r'"code_version": \{[^{}]*\}', '"code_version": {}', output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the older code tree")
    parser.add_argument("--votes", required=True)
    parser.add_argument("--arena", default="synthetic")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("extra", nargs="*", help="more leaderboard options, after --")
    opts = parser.parse_args()
    args = ["leaderboard", "--votes", opts.votes, "--arena", opts.arena, "--format", "json",
            *opts.extra]  # fmt: skip
    # Byte-code caches written as a researcher's Python would (the variable, set in some
    # shells, would make every run compile each module again).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    trees = {"before": opts.before.resolve(), "after": AFTER}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    outputs: dict[str, set[str]] = {name: set() for name in trees}
    load_start = os.getloadavg()[0]
    for _ in range(opts.runs):
        for name, tree in trees.items():
            wall, cpu, out = run(tree, args, env)
            times[name].append((wall, cpu))
            outputs[name].add(comparable(out))
    load_end = os.getloadavg()[0]
    print(f"`{' '.join(args)}`, {opts.runs} runs each, alternately; "
          f"load average {load_start:.1f} at the start, {load_end:.1f} at the end\n")  # fmt: skip
    print("| code | wall, median (range) | CPU, median |\n|---|---:|---:|")
    for name, pairs in times.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        print(f"| {name} | {statistics.median(walls):.3f} s ({min(walls):.3f}-{max(walls):.3f}) "
              f"| {statistics.median(cpus):.3f} s |")  # fmt: skip
    same = len(outputs["before"] | outputs["after"]) == 1
    print(f"\noutputs identical (code_version aside): {same}")


if __name__ == "__main__":
    main()
