"""Bound: the fewest votes any pairing needs until every model is established, against uniform.

    python bench/matchmaking_bound.py
    python bench/matchmaking_bound.py --models 20 --spread 400 --draw-rate 0.1

A model is ``established`` once its 95% interval is at most ``--width`` points
wide (and it has 100 battles, which comes far sooner here). The interval of
``theta_k - mean(theta)`` shrinks as ``1 / sqrt(votes)`` for a fixed share of
votes per pair, so the votes a design needs are proportional to the largest
centred variance per vote of its Fisher information. This script computes it
with the truth known (the best any sampler could do, as it must learn the
ratings first) for uniform pairs and for the share of votes per pair that
minimises the largest variance (Frank-Wolfe on a softened maximum), and prints
both and the saving: the bound on what matchmaking can save on
``votes_to_ci_50`` of ``python -m arena_core simulate``. Ties count as half
wins, as on the board: with draws at ``draw_rate * 4 p (1 - p)`` a vote's score
has variance ``(1 - draw_rate) p (1 - p)``, the same factor for every pair.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054
#: Natural log-odds per rating point.
PER_POINT = math.log(10) / 400
#: Sharpness of the softened maximum the design step follows (higher: closer to the max).
SOFTMAX = 1000.0


def centred_variances(shares, pairs, h, n) -> np.ndarray:
    """Variance of each ``theta_k - mean theta`` for one vote spread over ``pairs`` by ``shares``."""
    i, j = pairs
    info = np.zeros((n, n))
    np.add.at(info, (i, j), -shares * h)
    info += info.T
    info[np.diag_indices(n)] = -info.sum(axis=1)
    centre = np.eye(n) - 1.0 / n
    cov = np.linalg.pinv(info, hermitian=True)
    return np.diag(centre @ cov @ centre), cov


def best_design(pairs, h, n, steps: int) -> np.ndarray:
    """Shares of votes per pair that minimise the largest centred variance (Frank-Wolfe)."""
    i, j = pairs
    shares = np.full(len(i), 1.0 / len(i))
    centre = np.eye(n) - 1.0 / n
    for step in range(steps):
        var, cov = centred_variances(shares, pairs, h, n)
        focus = np.exp(SOFTMAX * (var / var.max() - 1.0))
        g = cov @ centre @ np.diag(focus / focus.sum()) @ centre @ cov
        gd = np.diag(g)
        gain = h * (gd[i] + gd[j] - 2.0 * g[i, j])  # variance removed per unit of share
        rate = 2.0 / (step + 3.0)
        shares *= 1.0 - rate
        shares[np.argmax(gain)] += rate
    return shares


def votes_needed(max_var: float, width: float, draw_rate: float) -> float:
    """Votes at which an interval of variance ``max_var / votes`` (times the dispersion) is ``width``."""
    half = width * PER_POINT / (2.0 * Z95)
    return max_var * (1.0 - draw_rate) / half**2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--spread", type=float, default=400.0, help="points, worst to best")
    parser.add_argument("--draw-rate", type=float, default=0.1)
    parser.add_argument("--width", type=float, default=50.0, help="established interval width")
    parser.add_argument("--steps", type=int, default=20_000, help="Frank-Wolfe steps")
    args = parser.parse_args(argv)
    n = args.models
    theta = np.linspace(-args.spread / 2, args.spread / 2, n) * PER_POINT
    pairs = np.triu_indices(n, 1)
    p = 1.0 / (1.0 + np.exp(theta[pairs[1]] - theta[pairs[0]]))
    h = p * (1.0 - p)
    uniform = centred_variances(np.full(len(h), 1.0 / len(h)), pairs, h, n)[0].max()
    shares = best_design(pairs, h, n, args.steps)
    best = centred_variances(shares, pairs, h, n)[0].max()
    u_votes = votes_needed(uniform, args.width, args.draw_rate)
    b_votes = votes_needed(best, args.width, args.draw_rate)
    gaps = np.abs(pairs[0] - pairs[1])
    near = shares[gaps <= 5].sum()
    print("| design | votes until every interval <= width | saving |")
    print("|---|---:|---:|")
    print(f"| uniform pairs | {u_votes:,.0f} | |")
    print(f"| best shares, truth known | {b_votes:,.0f} | {100 * (1 - best / uniform):.1f}% |")
    print(f"\n{n} models over {args.spread:.0f} points, draws {args.draw_rate}; the best design "
          f"puts {100 * near:.0f}% of its votes on pairs at most 5 ranks apart.")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
