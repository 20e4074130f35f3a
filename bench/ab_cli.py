"""Before and after: the whole CLI of two code trees, run alternately in fresh processes.

    python bench/ab_cli.py --before /tmp/old-tree --votes /tmp/speed-data/bench/parquet
    python bench/ab_cli.py --before /tmp/old-tree --votes DIR --runs 3 -- --method elo

``--before`` is a copy of an older commit (``git archive COMMIT | tar -x -C DIR``); the
tree this script is in is "after". Each round runs ``python -m arena_core leaderboard
--votes DIR --arena ARENA --format json`` (plus anything after ``--``) once in each tree,
A B A B, so both see the same load on a shared machine; the table gives the median and
range of wall and CPU seconds, the load average at the start and the end, and whether the
outputs were identical once what differs from run to run is left out (bench/runs.py's
``comparable``: in JSON the ``code_version`` block, which names each tree's commit, and the
revision's ``read_at``, the reader's clock; ``--format csv`` and ``table`` hold neither and
are compared as printed). The reader's clock is not fixed with ``--read-at``: older trees
lack the option.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from runs import comparable, timed_run

AFTER = Path(__file__).resolve().parent.parent


def output_format(extra: list[str]) -> str | None:
    """The ``--format`` among the options after ``--`` (the last one wins, as in the CLI),
    or None when they give none."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--format")
    return parser.parse_known_args(extra)[0].format


def spread(values: list[float]) -> str:
    """``median s (min-max)`` of a list of seconds."""
    return f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the older code tree")
    parser.add_argument("--votes", required=True)
    parser.add_argument("--arena", default="synthetic")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("extra", nargs="*", help="more leaderboard options, after --")
    opts = parser.parse_args()
    fmt = output_format(opts.extra)
    args = ["leaderboard", "--votes", opts.votes, "--arena", opts.arena,
            *([] if fmt else ["--format", "json"]), *opts.extra]  # fmt: skip
    # Byte-code caches written as a researcher's Python would (the variable, set in some
    # shells, would make every run compile each module again).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    trees = {"before": opts.before.resolve(), "after": AFTER}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    outputs: dict[str, set[str]] = {name: set() for name in trees}
    load_start = os.getloadavg()[0]
    for _ in range(opts.runs):
        for name, tree in trees.items():
            wall, cpu, out = timed_run([sys.executable, "-m", "arena_core", *args], tree, env)
            times[name].append((wall, cpu))
            outputs[name].add(comparable(out, fmt or "json"))
    load_end = os.getloadavg()[0]
    print(f"`{' '.join(args)}`, {opts.runs} runs each, alternately; "
          f"load average {load_start:.1f} at the start, {load_end:.1f} at the end\n")  # fmt: skip
    print("| code | wall, median (range) | CPU, median (range) |\n|---|---:|---:|")
    for name, pairs in times.items():
        print(f"| {name} | {spread([w for w, _ in pairs])} | {spread([c for _, c in pairs])} |")
    same = len(outputs["before"] | outputs["after"]) == 1
    aside = "as printed" if fmt not in (None, "json") else "code_version and revision.read_at aside"
    print(f"\noutputs identical ({aside}): {same}")


if __name__ == "__main__":
    main()
