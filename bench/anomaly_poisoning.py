"""How far one-off identities can move the anomalous-voter test's reference (README,
"Anomalous voters"): a known weakness, measured, not yet defended.

Voters with fewer than 5 votes are never tested, yet their votes are part of every pair's
reference. Here sybils cast 4 ``both_bad`` votes each, early in the period, among an honest
population (the simulation's, truth spread over 400 points); the detector is the one the
Space and the CLI run (``sequential_test`` through ``flag_voters``). Seeded; prints a table.

    python bench/anomaly_poisoning.py [--seeds 5] [--honest 300]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.ratings.counts import BOTH_BAD
from arena_core.simulation.synthetic import Truth, evenly_spread, uniform_pairs
from arena_core.simulation.voters import START_US, Arena, flag_voters

#: Votes per sybil: one under the first checkpoint, so none is ever tested.
PER_SYBIL = 4


def run(seed: int, sybils: int, honest: int, mean_votes: float = 20.0, models: int = 10):
    """(honest voters flagged, sybils flagged, honest voters tested, honest votes removed,
    honest votes) for one seeded arena."""
    rng = np.random.default_rng(seed)
    truth = Truth(evenly_spread(models, 400.0))
    per = rng.geometric(1.0 / mean_votes, honest)
    hv = np.repeat(np.arange(honest), per)
    ha, hb = uniform_pairs(models, len(hv), rng)
    ho = truth.sample(ha, hb, rng)
    sv = honest + np.repeat(np.arange(sybils), PER_SYBIL)
    sa, sb = uniform_pairs(models, len(sv), rng)
    so = np.full(len(sv), BOTH_BAD)
    # The sybils vote in the first third of the period; honest votes arrive throughout.
    order = np.argsort(np.concatenate([rng.random(len(hv)), rng.random(len(sv)) / 3]),
                       kind="stable")  # fmt: skip
    ts = START_US + np.cumsum(rng.integers(1, 5000, len(order))) * 1000
    cat = np.concatenate
    arena = Arena(cat([ha, sa])[order], cat([hb, sb])[order], cat([ho, so])[order],
                  cat([hv, sv])[order], ts, honest, truth)  # fmt: skip
    detection, _ = flag_voters(arena)
    flagged = np.array(sorted(detection.flagged_at), dtype=np.int64)
    return (int((flagged < honest).sum()), int((flagged >= honest).sum()),
            int((per >= 5).sum()), int(detection.mask[arena.voter < honest].sum()), len(hv))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--honest", type=int, default=300, help="honest voters per seed")
    args = parser.parse_args()
    print(
        f"| sybils ({PER_SYBIL} both_bad votes each) | honest voters flagged | "
        "of them tested | sybils flagged | honest votes out of the ratings |"
    )
    print("|---:|---:|---:|---:|---:|")
    for sybils in (0, 500, 2000, 5000):
        rows = [run(seed, sybils, args.honest) for seed in range(args.seeds)]
        fp, tp, tested, lost, votes = (sum(r[k] for r in rows) for k in range(5))
        print(
            f"| {sybils:,} | {fp:,} of {args.seeds * args.honest:,} | {tested:,} | {tp} | "
            f"{lost / votes:.0%} |"
        )


if __name__ == "__main__":
    main()
