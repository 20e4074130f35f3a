"""Bounds: the fewest votes any split of votes over pairs needs, with the truth known, against uniform.

    python bench/matchmaking_bound.py                 # computed bounds, then 20 seeds through the fit
    python bench/matchmaking_bound.py --seeds 0       # the computed bounds only (seconds)
    python bench/matchmaking_bound.py --models 20 --spread 400 --draw-rate 0.1 --seeds 40 --jobs 2

A split gives each pair a fixed share of the votes. With the truth known the
script finds the best split for each of the issue's three measures and the
votes it needs, against uniform pairs: the most matchmaking could save if it
had only to pick shares (it must learn the ratings first).

**Every model established** (``votes_to_ci_50``): its 95% interval at most
``--width`` points wide (and 100 battles, which come far sooner here). The
interval of ``theta_k - mean(theta)`` shrinks as ``1 / sqrt(votes)`` for a
fixed split, so the votes a split needs are proportional to the largest centred
variance per vote of its Fisher information; the best split minimises it
(Frank-Wolfe on a softened maximum). Ties count as half wins, as on the board:
with draws at ``draw_rate * 4 p (1 - p)`` a vote's score has variance
``(1 - draw_rate) p (1 - p)``, the same factor for every pair.

**Spearman rho** (``votes_to_spearman_95`` / ``_98``). The maximum-likelihood
ratings are asymptotically normal around the truth, with covariance the
dispersion times the inverse Fisher information; pair (k, l) is misordered with
chance ``P_kl = Phi(-gap_kl / sd_kl)``. Since the board's ranks are a
permutation of the true ranks ``r``, ``sum d^2 = 2 sum r^2 - 2 sum r r_hat``, and
``E[r_hat_k] = sum_l P(theta_hat_k > theta_hat_l)``; so, exactly,
``E[sum d^2] = 2 sum_{k<l} |r_k - r_l| P_kl`` (checked below against draws from
that normal law; ``2 sum P``, which counts every swap as two adjacent ranks, is
half of it here). ``E[rho] = 1 - 6 E[sum d^2] / (n (n^2 - 1))``. The best split
minimises ``E[sum d^2]`` at the votes where it reaches the threshold
(Frank-Wolfe with the gradient in closed form: the same step as above with
the misorder weights in place of the interval focus). The fit's prior is left
out: its shrinkage is nearly the same for every model, so it hardly moves the
order, and a split must not lean on the prior's centre (pairs (k, n-1-k) would,
on an arena symmetric about it: a quirk of the synthetic truth).

**Sustained** (the issue's reading: rho stays above the threshold from then to
the end of a 15,000-vote run). ``--seeds`` plays each split, pairs within one
vote of their share, through the board's real fit
(:mod:`arena_core.simulation`, the ``simulate`` scenario's setup), with uniform
random pairs (``simulate``'s baseline, same seeds) beside it.

**What this bounds.** Established: whatever a sampler does, its votes so far
are some split, and an interval's width depends only on the information they
carry (at the fitted ratings, close to the truth): no sampler, adaptive or not,
needs fewer votes than the best split, up to the normal approximation.
Spearman: a fixed split is no bound. Whether a pair is misordered now depends
on the errors the votes so far happened to make, which an adaptive sampler
sees (the pairs the board has close) and a split cannot: it can keep voting on
a pair until it is told apart, as a sequential test stops early, and the
sustained measure, decided by the last dip below the threshold, rewards exactly
that. The project's sampler beats the best split (README, Matchmaking).
"""

from __future__ import annotations

import argparse
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.simulation.matchmaking import Setup, run_arena

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054
#: Natural log-odds per rating point.
PER_POINT = math.log(10) / 400
#: Sharpness of the softened maximum the design step follows (higher: closer to the max).
SOFTMAX = 1000.0
#: Rounds of re-aiming a Spearman split at the votes it needs (the best split depends on them).
AIM_ROUNDS = 4
#: Draws of the Monte Carlo check of the exact E[sum d^2].
CHECK_DRAWS = 20_000
#: Bisection steps for votes to a threshold (log scale over 1 to 1e8 votes: 2**-60 of it).
BISECTIONS = 60
#: Floor of a variance, so that a pair the split never informs still has a finite z.
_TINY = 1e-300
#: The Spearman thresholds of the issue.
LEVELS = (0.95, 0.98)
#: Keys of ``run_arena`` reported per split, in column order.
MEASURES = ("votes_to_spearman_95", "votes_to_spearman_98", "votes_to_ci_50")


def laplacian(weights, pairs, n) -> np.ndarray:
    """``sum_ij weights_ij (e_i - e_j)(e_i - e_j)'``: the information of a split, per vote."""
    i, j = pairs
    out = np.zeros((n, n))
    np.add.at(out, (i, j), -weights)
    out += out.T
    out[np.diag_indices(n)] = -out.sum(axis=1)
    return out


def covariance(shares, pairs, h, n) -> np.ndarray:
    """Covariance per vote of the strengths (mean pinned), Bernoulli scores: ``pinv(info)``."""
    return np.linalg.pinv(laplacian(shares * h, pairs, n), hermitian=True)


def centred_variances(shares, pairs, h, n) -> np.ndarray:
    """Variance of each ``theta_k - mean theta`` for one vote spread over ``pairs`` by ``shares``."""
    centre = np.eye(n) - 1.0 / n
    return np.diag(centre @ covariance(shares, pairs, h, n) @ centre)


def pair_gains(shares, pairs, h, n, weigh) -> np.ndarray:
    """How fast more of each pair's share lowers a loss of the covariance ``S`` per vote.

    For a loss whose gradient in ``S`` is ``W = weigh(S)``, the share of pair
    (i, j) lowers it at rate ``h (G_ii + G_jj - 2 G_ij)``, ``G = S W S`` (the
    derivative of the inverse of the information).
    """
    i, j = pairs
    cov = covariance(shares, pairs, h, n)
    g = cov @ weigh(cov) @ cov
    gd = np.diag(g)
    return h * (gd[i] + gd[j] - 2.0 * g[i, j])


def frank_wolfe(pairs, h, n, steps: int, weigh, shares=None, done: int = 0) -> np.ndarray:
    """Shares that follow ``weigh`` downhill (:func:`pair_gains`), from uniform or ``shares``.

    Step ``t`` moves ``2 / (t + 3)`` of the votes to the pair of the largest
    gain; ``done`` steps already taken continue that schedule.
    """
    shares = np.full(len(pairs[0]), 1.0 / len(pairs[0])) if shares is None else shares.copy()
    for step in range(done, done + steps):
        gain = pair_gains(shares, pairs, h, n, weigh)
        rate = 2.0 / (step + 3.0)
        shares *= 1.0 - rate
        shares[np.argmax(gain)] += rate
    return shares


def best_design(pairs, h, n, steps: int) -> np.ndarray:
    """Shares of votes per pair that minimise the largest centred variance."""
    centre = np.eye(n) - 1.0 / n

    def focus_on_widest(cov):
        var = np.diag(centre @ cov @ centre)
        focus = np.exp(SOFTMAX * (var / var.max() - 1.0))
        return centre @ np.diag(focus / focus.sum()) @ centre

    return frank_wolfe(pairs, h, n, steps, focus_on_widest)


def votes_needed(max_var: float, width: float, draw_rate: float) -> float:
    """Votes at which an interval of variance ``max_var / votes`` (times the dispersion) is ``width``."""
    half = width * PER_POINT / (2.0 * Z95)
    return max_var * (1.0 - draw_rate) / half**2


def pair_sd(cov, pairs) -> np.ndarray:
    """Standard deviation of each pair's estimated gap, ``sqrt(u' cov u)``."""
    i, j = pairs
    return np.sqrt(np.maximum(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], _TINY))


def expected_displacement(shares, pairs, h, n, votes: float, dispersion: float, gap) -> float:
    """Exact ``E[sum d^2]`` of the board's ranks after ``votes`` votes of a split (see the docstring).

    The truth is in ascending order (``gap`` from it), so pair (i, j), i < j, is ``j - i`` ranks apart.
    """
    i, j = pairs
    sd = pair_sd(covariance(shares, pairs, h, n) * dispersion / votes, pairs)
    return float(2.0 * ((j - i) * norm.cdf(-gap[i, j] / sd)).sum())


def sampled_displacement(cov, theta, rng, draws: int) -> float:
    """``E[sum d^2]`` by Monte Carlo: ratings drawn from ``N(theta, cov)``, ranks compared."""
    eigen, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.maximum(eigen, 0.0))
    drawn = theta + rng.standard_normal((draws, len(theta))) @ root.T
    ranks = np.argsort(np.argsort(drawn, axis=1), axis=1)
    true = np.argsort(np.argsort(theta))
    return float(((ranks - true) ** 2).sum(axis=1).mean())


def displacement_at(level: float, n: int) -> float:
    """``sum d^2`` at which Spearman's rho (no ties) equals ``level``."""
    return (1.0 - level) * n * (n * n - 1) / 6.0


def votes_to_rho(shares, pairs, h, n, dispersion, gap, level) -> float:
    """Votes at which the expected rho of a split reaches ``level`` (it rises with the votes)."""
    target = displacement_at(level, n)
    low, high = 0.0, math.log(1e8)
    for _ in range(BISECTIONS):
        mid = 0.5 * (low + high)
        above = expected_displacement(shares, pairs, h, n, math.exp(mid), dispersion, gap) > target
        low, high = (mid, high) if above else (low, mid)
    return math.exp(high)


def misorder_weights(cov, *, pairs, n, scale: float, gap) -> np.ndarray:
    """Gradient of ``E[sum d^2]`` in the covariance per vote ``cov`` (votes at ``scale``).

    ``d E / d s2_kl = |dr_kl| phi(z) z / s2_kl``, ``z = gap / s`` with
    ``s2 = scale * u' cov u``; the sum over pairs is the information matrix of
    those weights (times ``scale``, left out: only the direction matters).
    """
    i, j = pairs
    sd = pair_sd(cov * scale, pairs)
    z = gap[i, j] / sd
    return laplacian((j - i) * norm.pdf(z) * z / sd**2, pairs, n)


def spearman_design(pairs, h, n, dispersion, gap, level, steps: int):
    """The split that reaches ``E[rho] >= level`` with the fewest votes, and those votes.

    The loss is ``E[sum d^2] = 2 sum |dr| Phi(-gap / sd)``; its gradient in the
    covariance is the information matrix of weights ``|dr| phi(z) z / sd^2``,
    ``z = gap / sd``, so :func:`frank_wolfe` does the rest. The best split for a
    given number of votes depends on it: aim at uniform's votes, then re-aim
    at the votes the split found needs, :data:`AIM_ROUNDS` times.
    """
    shares = np.full(len(pairs[0]), 1.0 / len(pairs[0]))
    votes = votes_to_rho(shares, pairs, h, n, dispersion, gap, level)
    done = 0
    for k in range(AIM_ROUNDS):
        rounds = steps if k == 0 else steps // AIM_ROUNDS
        weigh = partial(misorder_weights, pairs=pairs, n=n, scale=dispersion / votes, gap=gap)
        shares = frank_wolfe(pairs, h, n, rounds, weigh, shares, done)
        done += rounds
        votes = votes_to_rho(shares, pairs, h, n, dispersion, gap, level)
    return shares, votes


def fit_run(setup: Setup, shares, seed: int) -> dict:
    """One seed through the board's fit: uniform random pairs if ``shares`` is None."""
    if shares is None:
        result = run_arena(setup, "uniform", seed)
    else:
        result = run_arena(setup, "fixed", seed, shares=shares)
    return {key: result[key] for key in MEASURES}


def fit_runs(setup: Setup, designs: dict, seeds, jobs: int) -> dict:
    """Mean, standard error and misses of each measure, per design, over ``seeds``."""
    tasks = [(setup, shares, seed) for shares in designs.values() for seed in seeds]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            runs = list(pool.map(fit_run, *zip(*tasks, strict=True)))
    else:
        runs = [fit_run(*task) for task in tasks]
    out, k = {}, len(seeds)
    for d, name in enumerate(designs):
        block = runs[d * k : (d + 1) * k]
        out[name] = {}
        for key in MEASURES:
            got = np.array([r[key] for r in block if r[key] is not None], dtype=float)
            se = got.std(ddof=1) / math.sqrt(len(got)) if len(got) > 1 else float("nan")
            out[name][key] = (got.mean() if len(got) else None, se, k - len(got))
    return out


def as_matrix(shares, pairs, n) -> np.ndarray:
    """Pair shares as the ``(n, n)`` upper-triangular matrix the fixed sampler takes."""
    out = np.zeros((n, n))
    out[pairs] = shares
    return out


def computed_table(rows) -> list[str]:
    lines = ["| measure (computed, asymptotic normal) | uniform pairs | best split, truth known | saving |",
             "|---|---:|---:|---:|"]  # fmt: skip
    for label, uniform, best in rows:
        lines.append(
            f"| {label} | {uniform:,.0f} | {best:,.0f} | {100 * (1 - best / uniform):.1f}% |"
        )
    return lines


def fit_table(results: dict, seeds: int) -> list[str]:
    heads = ("sustained rho >= 0.95", "sustained rho >= 0.98", "every model established")
    lines = [f"| split, played through the board's fit ({seeds} seeds: mean +- s.e., saving) | "
             + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]  # fmt: skip
    base = results["uniform pairs, drawn at random (simulate's baseline)"]
    for name, block in results.items():
        cells = []
        for key in MEASURES:
            mean, se, missed = block[key]
            if mean is None:
                cells.append(f"never ({missed} missed)")
                continue
            saving = "" if block is base else f", {100 * (1 - mean / base[key][0]):+.0f}%"
            cells.append(
                f"{mean:,.0f} +- {se:,.0f}{saving}" + (f" ({missed} missed)" if missed else "")
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def bounds(args) -> tuple[list, dict, str]:
    """The computed table's rows, the splits to play through the fit, and the check line."""
    n, dispersion = args.models, 1.0 - args.draw_rate
    theta = np.linspace(-args.spread / 2, args.spread / 2, n) * PER_POINT
    pairs = np.triu_indices(n, 1)
    p = 1.0 / (1.0 + np.exp(theta[pairs[1]] - theta[pairs[0]]))
    h = p * (1.0 - p)
    gap = np.abs(theta[:, None] - theta[None, :])
    uniform = np.full(len(h), 1.0 / len(h))
    widest = best_design(pairs, h, n, args.steps)
    rows = [(f"votes until every interval <= {args.width:g} points",
             votes_needed(centred_variances(uniform, pairs, h, n).max(), args.width, args.draw_rate),
             votes_needed(centred_variances(widest, pairs, h, n).max(), args.width, args.draw_rate))]  # fmt: skip
    designs = {"uniform pairs, drawn at random (simulate's baseline)": None,
               "uniform pairs, fixed quota": as_matrix(uniform, pairs, n)}  # fmt: skip
    for level in LEVELS:
        shares, votes = spearman_design(pairs, h, n, dispersion, gap, level, args.steps // 4)
        rows.append((f"votes until E[rho] >= {level}",
                     votes_to_rho(uniform, pairs, h, n, dispersion, gap, level), votes))  # fmt: skip
        designs[f"best split for E[rho] >= {level}"] = as_matrix(shares, pairs, n)
    designs["best split for the widest interval"] = as_matrix(widest, pairs, n)

    votes = rows[1][1]
    cov = covariance(uniform, pairs, h, n) * dispersion / votes
    exact = expected_displacement(uniform, pairs, h, n, votes, dispersion, gap)
    drawn = sampled_displacement(cov, theta, np.random.default_rng(args.seed), CHECK_DRAWS)
    i, j = pairs
    shortcut = 2.0 * norm.cdf(-gap[i, j] / pair_sd(cov, pairs)).sum()
    near = widest[np.abs(i - j) <= 5].sum()
    check = (f"{n} models over {args.spread:.0f} points, draws {args.draw_rate}. Check of "
             f"E[sum d^2] for uniform pairs at {votes:,.0f} votes: {exact:.1f} exactly, "
             f"{drawn:.1f} from {CHECK_DRAWS:,} draws of the normal law (2 sum P: {shortcut:.1f}). "
             f"The widest-interval split puts {100 * near:.0f}% of its votes on pairs at most "
             f"5 ranks apart.")  # fmt: skip
    return rows, designs, check


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--spread", type=float, default=400.0, help="points, worst to best")
    parser.add_argument("--draw-rate", type=float, default=0.1)
    parser.add_argument("--width", type=float, default=50.0, help="established interval width")
    parser.add_argument("--steps", type=int, default=20_000, help="Frank-Wolfe steps")
    parser.add_argument("--seeds", type=int, default=20, help="seeds through the fit (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--jobs", type=int, default=1, help="processes for the seeds")
    args = parser.parse_args(argv)
    rows, designs, check = bounds(args)
    print("\n".join(computed_table(rows)) + "\n\n" + check)
    if args.seeds > 0:
        setup = Setup(models=args.models, spread=args.spread, draw_rate=args.draw_rate)
        seeds = list(range(args.seed, args.seed + args.seeds))
        print("\n" + "\n".join(fit_table(fit_runs(setup, designs, seeds, args.jobs), args.seeds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
