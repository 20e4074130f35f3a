"""Rating quality by simulation: do the board's 95% intervals hold the true rating 95% of the time?

``python -m arena_core simulate --scenario calibration`` draws synthetic arenas
with known true ratings (:mod:`~arena_core.simulation.synthetic`) and fits them
as the board does (:func:`~arena_core.ratings.fit.fit_board`, default settings
unless stated). Five tables, one per claim of the README's "Rating quality":

1. **newcomers**: an arena of established models (``--calibration-models``,
   ``--calibration-votes`` votes, true ratings drawn with standard deviation
   ``--calibration-spread``) joined by newcomers with 3, 10 and 30 battles
   whose true ratings are drawn from the same spread; coverage and width.
2. **far from the prior**: one newcomer at a fixed true rating (1000, 1200,
   1400), to show what an interval means for a model the prior does not expect.
3. **accuracy by votes**: whole arenas of growing size: error, rank
   correlation and coverage.
4. **disconnected**: two groups that never met; whether the board says so.
5. **unbounded**: plain maximum likelihood (``--prior-weight 0``) with a model
   that never lost; whether the board still comes out, with a bound that holds.

Truth is compared on the board's scale: each board pins the mean of (rating -
prior) over its rated models (the posterior), or centres each group on 1000
(maximum likelihood), so the true ratings are shifted the same way before
checking coverage.
"""

from __future__ import annotations

import argparse

import numpy as np

from arena_core.leaderboard import BoardParams, Entrant, standings
from arena_core.ratings.counts import count_pairs
from arena_core.ratings.elo import EloState
from arena_core.ratings.fit import fit_board
from arena_core.ratings.scale import ANCHOR
from arena_core.simulation.options import NON_NEGATIVE, PROBABILITY, whole
from arena_core.simulation.synthetic import Truth, normal_spread, spearman, uniform_pairs

#: Repetitions (simulated logs) per table cell when ``--seeds`` is not given.
DEFAULT_SEEDS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("calibration")
    group.add_argument(
        "--calibration-models",
        type=whole(4),  # two groups of two in the disconnected table
        default=12,
        metavar="N",
        help="established models in the arena (default: %(default)s)",
    )
    group.add_argument(
        "--calibration-votes",
        type=whole(100),  # fewer leave models unbounded: no interval to cover
        default=5000,
        metavar="N",
        help="votes among the established models (default: %(default)s)",
    )
    group.add_argument(
        "--calibration-spread",
        type=NON_NEGATIVE,
        default=100.0,
        metavar="POINTS",
        help="standard deviation of true ratings (default: %(default)s)",
    )
    group.add_argument(
        "--calibration-battles",
        type=_ints,
        default=(3, 10, 30),
        metavar="K,K",
        help="battles of each newcomer (default: 3,10,30)",
    )
    group.add_argument(
        "--calibration-true",
        type=_floats,
        default=(1000.0, 1200.0, 1400.0),
        metavar="R,R",
        help="fixed true ratings of table 2 (default: 1000,1200,1400)",
    )
    group.add_argument(
        "--calibration-sizes",
        type=_ints,
        default=(500, 2000, 10_000, 50_000),
        metavar="N,N",
        help="arena sizes in votes for table 3",
    )
    group.add_argument("--calibration-draw-rate", type=PROBABILITY, default=0.1, metavar="P",
                       help="probability that equals draw (default: %(default)s)")  # fmt: skip


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(","))


def run(args) -> dict:
    """Every table, as plain numbers."""
    seeds = args.seeds or DEFAULT_SEEDS
    rng = np.random.default_rng(args.seed)
    return {
        "settings": _settings(args, seeds),
        "newcomers": newcomers(args, seeds, rng),
        "far_from_prior": far_from_prior(args, seeds, rng),
        "accuracy": accuracy(args, seeds, rng),
        "disconnected": disconnected(args, seeds, rng),
        "unbounded": unbounded(args, seeds, rng),
    }


def _settings(args, seeds: int) -> dict:
    return {"models": args.calibration_models, "votes": args.calibration_votes,
            "spread": args.calibration_spread, "draw_rate": args.calibration_draw_rate,
            "logs": seeds, "seed": args.seed}  # fmt: skip


def _arena(args, rng, extra: int = 0):
    """True ratings of the established models and ``extra`` newcomers, and their votes."""
    n = args.calibration_models
    truth = ANCHOR + rng.normal(0.0, args.calibration_spread, n + extra)
    a, b = uniform_pairs(n, args.calibration_votes, rng)
    return truth, a, b


def _join(a, b, newcomer: int, battles: int, rng, n_est: int):
    """Votes of a newcomer against uniformly drawn established models, either side as A."""
    opponents = rng.integers(0, n_est, battles)
    first = rng.random(battles) < 0.5
    return (np.concatenate([a, np.where(first, newcomer, opponents)]),
            np.concatenate([b, np.where(first, opponents, newcomer)]))  # fmt: skip


def _fit(n: int, a, b, truth, rng, draw_rate: float, **kwargs):
    outcome = Truth(truth, draw_rate=draw_rate).sample(a, b, rng)
    counts = count_pairs(n, a, b, outcome)
    return fit_board(n, counts, **kwargs), counts


def _pinned(truth, played) -> np.ndarray:
    """True ratings on a posterior board's scale: mean of (truth - prior) over played models is 0."""
    return truth - (truth[played] - ANCHOR).mean()


def newcomers(args, seeds: int, rng) -> dict:
    """Table 1: coverage and width for newcomers drawn from the spread, and established models."""
    ks, n_est = args.calibration_battles, args.calibration_models
    n = n_est + len(ks)
    hits, widths = np.zeros((seeds, n)), np.zeros((seeds, n))
    for s in range(seeds):
        truth, a, b = _arena(args, rng, extra=len(ks))
        for j, k in enumerate(ks):
            a, b = _join(a, b, n_est + j, k, rng, n_est)
        fit, counts = _fit(n, a, b, truth, rng, args.calibration_draw_rate)
        centred = _pinned(truth, counts.battles().sum(axis=1) > 0)
        hits[s] = (fit.low <= centred) & (centred <= fit.high)
        widths[s] = fit.high - fit.low
    rows = [{"model": "established", "battles": int(2 * args.calibration_votes / n_est),
             "coverage": float(hits[:, :n_est].mean()), "width": float(widths[:, :n_est].mean())}]  # fmt: skip
    rows += [{"model": "newcomer", "battles": k, "coverage": float(hits[:, n_est + j].mean()),
              "width": float(widths[:, n_est + j].mean())} for j, k in enumerate(ks)]  # fmt: skip
    return {"rows": rows, "checks": {"established": seeds * n_est, "newcomer": seeds}}


def far_from_prior(args, seeds: int, rng) -> dict:
    """Table 2: one newcomer at a fixed true rating, coverage by battles."""
    n_est = args.calibration_models
    cells = []
    for true in args.calibration_true:
        for k in args.calibration_battles:
            hit = 0
            for _ in range(seeds):
                truth, a, b = _arena(args, rng, extra=1)
                truth[n_est] = true
                a, b = _join(a, b, n_est, k, rng, n_est)
                fit, counts = _fit(n_est + 1, a, b, truth, rng, args.calibration_draw_rate)
                centred = _pinned(truth, counts.battles().sum(axis=1) > 0)[n_est]
                hit += bool(fit.low[n_est] <= centred <= fit.high[n_est])
            cells.append({"true": true, "battles": k, "coverage": hit / seeds})
    return {"cells": cells, "checks": seeds}


def accuracy(args, seeds: int, rng) -> dict:
    """Table 3: whole arenas of growing size: error, rank correlation, coverage, width."""
    n = args.calibration_models
    rows = []
    for votes in args.calibration_sizes:
        err, rho, hit, width = [], [], [], []
        for _ in range(max(1, seeds // 4)):
            truth = normal_spread(n, args.calibration_spread, rng)
            a, b = uniform_pairs(n, votes, rng)
            fit, counts = _fit(n, a, b, truth, rng, args.calibration_draw_rate)
            centred = _pinned(truth, counts.battles().sum(axis=1) > 0)
            err.append(np.abs(fit.rating - centred).mean())
            rho.append(spearman(fit.rating, truth))
            hit.append(((fit.low <= centred) & (centred <= fit.high)).mean())
            width.append((fit.high - fit.low).mean())
        rows.append({"votes": votes, "mean_abs_error": float(np.mean(err)),
                     "spearman": float(np.mean(rho)), "coverage": float(np.mean(hit)),
                     "width": float(np.mean(width))})  # fmt: skip
    return {"rows": rows, "logs": max(1, seeds // 4)}


def disconnected(args, seeds: int, rng) -> dict:
    """Table 4: two groups of models that never met, on the default board and with prior 0."""
    half = max(2, args.calibration_models // 2)
    n = 2 * half
    entrants = [Entrant(f"m{i}", f"m{i}") for i in range(n)]
    out = {}
    for label, weight in (("fitted", None), ("none", 0.0)):
        params = BoardParams(prior_weight=weight, bootstrap_rounds=200)
        warned = grouped = hit = total = 0
        for _ in range(max(1, seeds // 4)):
            truth = ANCHOR + rng.normal(0.0, args.calibration_spread, n)
            a1, b1 = uniform_pairs(half, args.calibration_votes // 2, rng)
            a2, b2 = uniform_pairs(half, args.calibration_votes // 2, rng)
            a, b = np.concatenate([a1, a2 + half]), np.concatenate([b1, b2 + half])
            counts = count_pairs(n, a, b, Truth(truth).sample(a, b, rng))
            result = standings(entrants, EloState.start(n), counts, params)
            warned += any("never met" in w for w in result.warnings)
            rows = {r.model_id: r for r in result.rows}
            grouped += all(rows[f"m{i}"].component == rows[f"m{i // half * half}"].component
                           != rows[f"m{(i // half * half + half) % n}"].component
                           for i in range(n))  # fmt: skip
            for g in range(2):
                members = range(g * half, (g + 1) * half)
                shift = (truth[list(members)] - ANCHOR).mean() if weight == 0 else (
                    (truth - ANCHOR).mean())  # fmt: skip
                for i in members:
                    r = rows[f"m{i}"]
                    hit += r.ci_low <= truth[i] - shift <= r.ci_high
                    total += 1
        logs = max(1, seeds // 4)
        out[label] = {"warned": warned / logs, "groups_found": grouped / logs,
                      "coverage": hit / total}  # fmt: skip
    return out


#: Table 5's sparse case: models and votes of an arena too small for plain MLE.
SPARSE_ARENA = (4, 12)


def unbounded(args, seeds: int, rng) -> dict:
    """Table 5: plain MLE where some ratings are infinite; the board must still come out."""
    params = BoardParams(prior_weight=0.0, bootstrap_rounds=200)
    n_est, k = args.calibration_models, 5
    strong = ANCHOR + 3.0 * args.calibration_spread
    rows = [_unbounded_case(f"newcomer at {strong:g} that won its {k} battles", seeds, rng,
                            params, lambda: _strong_newcomer(args, rng, strong, k), n_est)]  # fmt: skip
    n, votes = SPARSE_ARENA
    rows.append(_unbounded_case(f"{n} models, {votes} votes", seeds, rng, params,
                                lambda: _sparse(args, rng, n, votes), None))  # fmt: skip
    return {"rows": rows, "rounds": params.bootstrap_rounds}


def _strong_newcomer(args, rng, true: float, k: int):
    n_est = args.calibration_models
    truth, a, b = _arena(args, rng, extra=1)
    truth[n_est] = true
    a, b = _join(a, b, n_est, k, rng, n_est)
    outcome = Truth(truth, draw_rate=args.calibration_draw_rate).sample(a, b, rng)
    mine = (a == n_est) | (b == n_est)
    won = np.where(a[mine] == n_est, outcome[mine] == 0, outcome[mine] == 1).all()
    return (truth, a, b, outcome) if won else None


def _sparse(args, rng, n: int, votes: int):
    truth = ANCHOR + rng.normal(0.0, args.calibration_spread, n)
    a, b = uniform_pairs(n, votes, rng)
    return truth, a, b, Truth(truth, draw_rate=args.calibration_draw_rate).sample(a, b, rng)


def _unbounded_case(label, seeds, rng, params, draw, watched) -> dict:
    """Boards fitted, boards with unbounded rows, bounds that hold, replicates dropped."""
    boards = with_unbounded = bounds = holds = dropped = 0
    for _ in range(seeds):
        drawn = draw()
        if drawn is None:
            continue
        truth, a, b, outcome = drawn
        n = len(truth)
        entrants = [Entrant(f"m{i}", f"m{i}") for i in range(n)]
        result = standings(entrants, EloState.start(n), count_pairs(n, a, b, outcome), params)
        boards += 1
        free = [r for r in result.rows if r.unbounded]
        with_unbounded += bool(free)
        for r in free:
            i = int(r.model_id[1:])
            ranked = [int(q.model_id[1:]) for q in result.rows
                      if q.rating is not None and q.component == r.component]  # fmt: skip
            if (watched is not None and i != watched) or not ranked:
                continue
            centred = truth[i] - (truth[ranked] - ANCHOR).mean()
            if r.ci_low is not None or r.ci_high is not None:
                bounds += 1
                holds += (r.ci_low is None or centred >= r.ci_low) and (
                    r.ci_high is None or centred <= r.ci_high)  # fmt: skip
        dropped += result.fit.bootstrap_dropped or 0
    return {"case": label, "boards": boards, "with_unbounded": with_unbounded / max(boards, 1),
            "bounds": bounds, "bound_holds": holds / max(bounds, 1),
            "dropped": dropped / max(boards, 1)}  # fmt: skip


def format_table(result: dict) -> str:
    """The five tables as Markdown."""
    s = result["settings"]
    out = [f"Arena: {s['models']} established models, {s['votes']} votes, true ratings spread "
           f"±{s['spread']:g} (sd), draw rate {s['draw_rate']:g}; {s['logs']} logs per cell, "
           f"seed {s['seed']}.", "",
           "**1. Coverage of the 95% intervals (default board)**", "",
           "| model | battles | coverage | mean width |", "|---|---:|---:|---:|"]  # fmt: skip
    out += [f"| {r['model']} | {r['battles']} | {r['coverage']:.3f} | {r['width']:.0f} |"
            for r in result["newcomers"]["rows"]]  # fmt: skip
    far = result["far_from_prior"]["cells"]
    ks = sorted({c["battles"] for c in far})
    out += ["", "**2. Coverage for a newcomer at a fixed true rating (prior 1000)**", "",
            "| true rating | " + " | ".join(f"k = {k}" for k in ks) + " |",
            "|---|" + "---:|" * len(ks)]  # fmt: skip
    for true in sorted({c["true"] for c in far}):
        cells = {c["battles"]: c["coverage"] for c in far if c["true"] == true}
        out.append(f"| {true:g} | " + " | ".join(f"{cells[k]:.3f}" for k in ks) + " |")
    out += ["", f"**3. Accuracy by votes ({result['accuracy']['logs']} arenas each)**", "",
            "| votes | mean abs error | Spearman | coverage | mean width |",
            "|---:|---:|---:|---:|---:|"]  # fmt: skip
    out += [f"| {r['votes']} | {r['mean_abs_error']:.1f} | {r['spearman']:.3f} | "
            f"{r['coverage']:.3f} | {r['width']:.0f} |" for r in result["accuracy"]["rows"]]  # fmt: skip
    out += ["", "**4. Two groups that never met**", "",
            "| prior | board warns | groups found | coverage |", "|---|---:|---:|---:|"]  # fmt: skip
    out += [f"| {label} | {d['warned']:.2f} | {d['groups_found']:.2f} | {d['coverage']:.3f} |"
            for label, d in result["disconnected"].items()]  # fmt: skip
    u = result["unbounded"]
    out += ["", f"**5. Plain maximum likelihood (--prior-weight 0, {u['rounds']} bootstrap rounds)**",
            "", "| case | boards | with unbounded rows | bounds | bound holds | replicates "
            "dropped per board |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    out += [f"| {r['case']} | {r['boards']} | {r['with_unbounded']:.2f} | {r['bounds']} | "
            f"{r['bound_holds']:.3f} | {r['dropped']:.1f} |" for r in u["rows"]]  # fmt: skip
    return "\n".join(out)
