"""How far a flood of new identities can move the anomalous-voter test's reference (README,
"Anomalous voters").

Sybils cast ``both_bad`` votes (4, 5 or 8 each), early in the period, among an honest
population (the simulation's, truth spread over 400 points); the detector is the one the
Space and the CLI run (``sequential_test`` through ``flag_voters``). A voter's votes enter
the reference only from its 5th vote on (the first checkpoint, where it is first tested),
one per pair: sybils of 4 votes write nothing there, sybils of 5 or more are tested.
Seeded; prints a table.

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

#: Votes per sybil: one under the first checkpoint (never tested), at it, and past it.
PER_SYBIL = (4, 5, 8)
#: Sybils per seeded arena.
SYBILS = (0, 500, 2000, 5000)


def run(seed: int, sybils: int, honest: int, per_sybil: int, mean_votes: float = 20.0,
        models: int = 10):  # fmt: skip
    """(honest voters flagged, sybils flagged, honest voters tested, honest votes removed,
    honest votes) for one seeded arena."""
    rng = np.random.default_rng(seed)
    truth = Truth(evenly_spread(models, 400.0))
    per = rng.geometric(1.0 / mean_votes, honest)
    hv = np.repeat(np.arange(honest), per)
    ha, hb = uniform_pairs(models, len(hv), rng)
    ho = truth.sample(ha, hb, rng)
    sv = honest + np.repeat(np.arange(sybils), per_sybil)
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
        "| votes per sybil | sybils | honest voters flagged | of them tested | sybils flagged | "
        "honest votes out of the ratings |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for per in PER_SYBIL:
        for sybils in SYBILS:
            rows = [run(seed, sybils, args.honest, per) for seed in range(args.seeds)]
            fp, tp, tested, lost, votes = (sum(r[k] for r in rows) for k in range(5))
            print(
                f"| {per} | {sybils:,} | {fp:,} of {args.seeds * args.honest:,} | {tested:,} | "
                f"{tp:,} of {args.seeds * sybils:,} | {lost / votes:.0%} |"
            )


if __name__ == "__main__":
    main()
