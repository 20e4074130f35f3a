"""Matchmaking against uniform pairs: votes until the board is right, on arenas with known truth.

Both samplers play the same synthetic arenas (:mod:`~arena_core.simulation.synthetic`:
models spread evenly, draws, optional drift) on the same seeds, and the k-th
meeting of a pair ends the same way under both (common random numbers), so
they differ only in which pairs they draw. Every ``refit_votes`` votes the
board's Bradley-Terry fit is refreshed, as the Space refreshes its cached fit;
the sampler draws from that fit and the live battle counts. Reported, averaged
over seeds (a target never reached within the run is counted in ``*_missed``):

* ``votes_to_spearman_95`` / ``_98``: votes from which Spearman's rho between
  the board and the truth stays at or above 0.95 / 0.98 (checked at every refit);
* ``votes_to_ci_50``: votes until every model is ``established`` (interval at
  most 50 points wide, at least 100 battles), by the board's own posterior
  intervals, checked at every refit;
* ``mean_ci_width`` (and ``max_ci_width``, the widest) after N votes and
  ``ci_coverage``, the share of those intervals that hold the true rating;
* ``min_battles_share`` / ``max_battles_share``: over every ``window``
  consecutive votes, the fewest (most) battles of a model over the mean;
  ``min_battles`` / ``max_battles`` at the end of the run;
* a newcomer, in a second run per seed: one model (a different one per seed)
  joins after ``join`` votes; ``votes_newcomer_10`` and
  ``votes_newcomer_established`` count votes from its arrival;
* ``savings``: the votes the matchmaker saves per target, over the seeds both
  samplers reached it on.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from arena_core.leaderboard import BoardParams
from arena_core.matchmaking import MatchParams
from arena_core.simulation.arena import SimArena
from arena_core.simulation.options import COUNT, NON_NEGATIVE, real, whole
from arena_core.simulation.synthetic import first_sustained, spearman

#: The samplers compared, in report order.
SAMPLERS = ("uniform", "matchmaking")
#: Seeds averaged over when ``--seeds`` is not given (the README's table uses them).
DEFAULT_SEEDS = 60
#: Battles of the newcomer counted by ``votes_newcomer_10``.
NEWCOMER_TARGET_BATTLES = 10
#: Votes between checks of whether the newcomer is established, counted from its arrival.
NEWCOMER_CHECK_VOTES = 100
#: What the matchmaking issue asks for, printed beside each figure.
TARGETS = {
    "votes_to_spearman_95": ">= 25% fewer",
    "votes_to_spearman_98": ">= 40% fewer",
    "votes_to_ci_50": ">= 20% fewer",
    "ci_coverage": "0.93 to 0.97",
    "min_battles_share": ">= 0.5",
    "votes_newcomer_10": "<= 30",
}
_SAVED = ("votes_to_spearman_95", "votes_to_spearman_98", "votes_to_ci_50")
_COUNTED = (*_SAVED, "votes_newcomer_10", "votes_newcomer_established")


@dataclass(frozen=True)
class Setup:
    """One simulated arena and how it is measured."""

    models: int = 20
    spread: float = 400.0
    draw_rate: float = 0.1
    #: Votes per run (the horizon of "sustained").
    votes: int = 15_000
    #: Votes after which interval widths and coverage are measured.
    report_at: tuple[int, ...] = (2000, 5000)
    #: Votes of the windows ``min_battles_share`` looks at (the issue's "any 1,000 votes").
    window: int = 1000
    #: Votes before the newcomer joins, in its own run.
    join: int = 2500
    #: Standard deviation (points per 1000 votes) of a random walk of the true ratings.
    drift: float = 0.0
    #: Votes between refreshes of the sampler's snapshot alone (0: at the board's refits,
    #: every ``match.refit_votes``, as the Space does). The board is still measured at its
    #: refits only, so the measures keep their granularity: this asks what a fresher
    #: snapshot would buy the sampler, not what a finer measurement reports.
    snapshot_votes: int = 0
    board: BoardParams = field(default_factory=BoardParams)
    match: MatchParams = field(default_factory=MatchParams)


def run_arena(setup: Setup, sampler: str, seed: int, shares=None) -> dict:
    """One seed of the main comparison: every model present from the first vote.

    ``shares`` is the split of votes over pairs of the "fixed" sampler
    (:class:`~arena_core.simulation.arena.SimArena`).
    """
    arena = SimArena(setup, sampler, seed, shares=shares)
    steps, rho, widths, widest, covered, shown, settled_at = [], [], {}, {}, 0, 0, None
    while arena.t < setup.votes:
        arena.refit()
        t = arena.t
        if t > 0:
            steps.append(t)
            rho.append(spearman(arena.ratings, arena.truth.ratings))
        if t in setup.report_at:
            low, high = arena.low, arena.high
            widths[str(t)] = float(np.mean(high - low))
            widest[str(t)] = float(np.max(high - low))
            covered += int(np.sum((low <= arena.truth.ratings) & (arena.truth.ratings <= high)))
            shown += setup.models
        if settled_at is None and t > 0 and arena.settled(range(setup.models)):
            settled_at = t
        arena.play(min(setup.match.refit_votes, setup.votes - t))
    arena.refit()
    steps.append(arena.t)
    rho.append(spearman(arena.ratings, arena.truth.ratings))
    # The last refit counts as much as the others (rho is read there too): a board
    # established only by the last vote was reported as never established.
    if settled_at is None and arena.settled(range(setup.models)):
        settled_at = arena.t
    low_share, high_share = window_shares(arena.a, arena.b, setup.models, setup.window)
    played = arena.battles.sum(axis=1)
    return {
        "votes_to_spearman_95": first_sustained(rho, 0.95, steps),
        "votes_to_spearman_98": first_sustained(rho, 0.98, steps),
        "votes_to_ci_50": settled_at,
        "mean_ci_width": widths,
        "max_ci_width": widest,
        "covered": covered,
        "intervals": shown,
        "min_battles_share": low_share,
        "max_battles_share": high_share,
        "min_battles": int(played.min()),
        "max_battles": int(played.max()),
    }


def run_newcomer(setup: Setup, sampler: str, seed: int) -> dict:
    """One seed of the newcomer run: a model picked by the seed joins after ``join`` votes.

    Whether it is established is checked at the first refit at or after every
    :data:`NEWCOMER_CHECK_VOTES` votes from its arrival. Counted from the first vote, as
    before, the checks missed a newcomer that joined off that grid: after 110 votes, with
    refits every 25, the count was never a multiple of 100, and every seed read "never".
    """
    newcomer = int(np.random.default_rng([seed, 4]).integers(setup.models))
    arena = SimArena(setup, sampler, seed, absent={newcomer})
    join, settled_at = setup.join, None
    due = join + NEWCOMER_CHECK_VOTES  # the next check
    while arena.t < setup.votes and settled_at is None:
        if arena.t == join:
            arena.absent.clear()
        checking = arena.t >= due
        while due <= arena.t:
            due += NEWCOMER_CHECK_VOTES
        if sampler == "matchmaking" or checking:
            arena.refit()
        if checking and arena.settled([newcomer]):
            settled_at = arena.t - join
        step = setup.match.refit_votes
        arena.play(min(step, setup.votes - arena.t, join - arena.t if arena.t < join else step))
    # The run's end is a check too (as in run_arena): a newcomer that joined within the
    # last NEWCOMER_CHECK_VOTES votes was never checked, and read "never established".
    if settled_at is None and arena.t > join:
        arena.refit()
        if arena.settled([newcomer]):
            settled_at = arena.t - join
    met = (arena.a[join : arena.t] == newcomer) | (arena.b[join : arena.t] == newcomer)
    hits = np.flatnonzero(np.cumsum(met) >= NEWCOMER_TARGET_BATTLES)
    tenth = int(hits[0]) + 1 if len(hits) else None
    return {"votes_newcomer_10": tenth, "votes_newcomer_established": settled_at}


def window_shares(a, b, n: int, window: int) -> tuple[float, float]:
    """Fewest and most battles of a model in any ``window`` consecutive votes, over the mean.

    A run shorter than the window counts as one window.
    """
    window = min(window, len(a))
    seen = np.zeros((len(a) + 1, n), dtype=np.int64)
    rows = np.arange(1, len(a) + 1)
    np.add.at(seen, (rows, a), 1)
    np.add.at(seen, (rows, b), 1)
    cum = seen.cumsum(axis=0)
    per_window = cum[window:] - cum[:-window]
    mean = 2.0 * window / n
    return float(per_window.min() / mean), float(per_window.max() / mean)


def summarise(per_seed: list[dict]) -> dict:
    """Average one sampler's per-seed results; a target never reached is counted apart."""
    out: dict = {}
    for key in _COUNTED:
        reached = [r[key] for r in per_seed if r.get(key) is not None]
        out[key] = float(np.mean(reached)) if reached else None
        out[f"{key}_missed"] = len(per_seed) - len(reached)
    for key in ("mean_ci_width", "max_ci_width"):
        out[key] = {k: float(np.mean([r[key][k] for r in per_seed])) for k in per_seed[0][key]}
    shown = sum(r["intervals"] for r in per_seed)
    out["ci_coverage"] = sum(r["covered"] for r in per_seed) / shown if shown else None
    for key, worst in (("min_battles_share", np.min), ("min_battles", np.min),
                       ("max_battles_share", np.max), ("max_battles", np.max)):  # fmt: skip
        out[key] = float(np.mean([r[key] for r in per_seed]))
        out[f"{key}_worst"] = float(worst([r[key] for r in per_seed]))
    out["seeds"] = len(per_seed)
    return out


def savings(uniform: list[dict], matched: list[dict]) -> dict:
    """Fraction of votes the sampler saves against uniform pairs, per target, over the seeds
    both reached it on (the per-seed results, in the same seed order).

    The means over whatever each side reached compared different arenas: a sampler that
    missed its hardest seeds averaged over the easy ones and read as a saving it did not
    make. With no seed missed this is the ratio of the two means in the summary.
    """
    out = {}
    for key in _SAVED:
        both = [(u[key], m[key]) for u, m in zip(uniform, matched, strict=True)
                if u[key] is not None and m[key] is not None]  # fmt: skip
        base = float(np.mean([u for u, _ in both])) if both else 0.0
        out[key] = 1.0 - float(np.mean([m for _, m in both])) / base if base else None
    return out


def run_seed(setup: Setup, sampler: str, seed: int) -> dict:
    """Both runs of one seed under one sampler (the unit of work of ``simulate``)."""
    return run_arena(setup, sampler, seed) | run_newcomer(setup, sampler, seed)


def simulate(setup: Setup, seeds, jobs: int = 1) -> dict:
    """Both samplers on the same seeds: ``{"uniform": {...}, "matchmaking": {...}}``.

    ``jobs`` > 1 runs the seeds in that many processes; every run is seeded by
    its own seed alone, so the result does not depend on ``jobs``.
    """
    seeds = list(seeds)
    tasks = [(setup, sampler, s) for sampler in SAMPLERS for s in seeds]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            runs = list(pool.map(run_seed, *zip(*tasks, strict=True)))
    else:
        runs = [run_seed(*task) for task in tasks]
    per_seed = {s: runs[k * len(seeds) : (k + 1) * len(seeds)] for k, s in enumerate(SAMPLERS)}
    result = {s: summarise(per_seed[s]) | {"setup": _describe(setup)} for s in SAMPLERS}
    result["matchmaking"]["savings"] = savings(per_seed["uniform"], per_seed["matchmaking"])
    return result


def _describe(setup: Setup) -> dict:
    out = {k: v for k, v in asdict(setup).items() if k not in ("board", "match")}
    out["report_at"] = list(setup.report_at)
    out["refit_votes"] = setup.match.refit_votes
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = Setup()
    add = parser.add_argument
    add("--mm-models", type=whole(3), default=d.models, help="models in the arena")
    add(
        "--mm-spread", type=NON_NEGATIVE, default=d.spread, help="points from the worst to the best"
    )
    add("--mm-draw-rate", type=real(0.0, 0.5), default=d.draw_rate,
        help="chance two equals draw (at most 0.5, as the simulated truth allows)")  # fmt: skip
    add("--mm-votes", type=COUNT, default=d.votes, help="votes per run")
    add("--mm-refit", type=COUNT, default=d.match.refit_votes, help="votes between refits")
    add("--mm-join", type=whole(0), default=None,
        help=f"votes before the newcomer joins, below --mm-votes (default {d.join:,}, or"
             " halfway through a run that is not longer)")  # fmt: skip
    add(
        "--mm-drift",
        type=NON_NEGATIVE,
        default=d.drift,
        help="drift of the truth: standard deviation, points per 1000 votes",
    )
    add("--mm-report-at", type=COUNT, nargs="+", default=None, metavar="N",
        help="votes after which interval widths and coverage are measured (multiples of"
             f" --mm-refit; default {', '.join(map(str, d.report_at))}, those within --mm-votes)")  # fmt: skip
    add("--mm-jobs", type=COUNT, default=1, help="processes to run the seeds in")


def run(args) -> dict:
    base = Setup()
    report_at = args.mm_report_at or [t for t in base.report_at if t <= args.mm_votes]
    join = args.mm_join
    if join is None:
        join = base.join if base.join < args.mm_votes else args.mm_votes // 2
    elif join >= args.mm_votes:  # the newcomer never joined, and read "never" in every row
        raise ValueError(f"--mm-join {join}: the newcomer would join after the last vote;"
                         f" choose fewer votes than --mm-votes ({args.mm_votes})")  # fmt: skip
    setup = replace(base, models=args.mm_models, spread=args.mm_spread, draw_rate=args.mm_draw_rate,
                    votes=args.mm_votes, join=join,
                    drift=args.mm_drift, report_at=tuple(report_at),
                    match=replace(base.match, refit_votes=args.mm_refit))  # fmt: skip
    unmeasured = [t for t in setup.report_at if t % args.mm_refit or t > args.mm_votes]
    if unmeasured:  # the board is measured at refits only: such points gave no row, silently
        raise ValueError(f"--mm-report-at {', '.join(map(str, unmeasured))}: the board is measured"
                         f" where it is refitted, every --mm-refit ({args.mm_refit}) votes, up to"
                         f" --mm-votes ({args.mm_votes}); choose multiples of {args.mm_refit}")  # fmt: skip
    seeds = range(args.seed, args.seed + (args.seeds or DEFAULT_SEEDS))
    return simulate(setup, seeds, jobs=args.mm_jobs)


def format_table(result: dict) -> str:
    """The comparison as a Markdown table, the issue's target beside each figure."""
    u, m = result["uniform"], result["matchmaking"]
    rows = ["| measure | uniform | matchmaking | saving | target |", "|---|---:|---:|---:|---|"]
    for key in _SAVED:
        s = m["savings"][key]
        rows.append(f"| {key} | {_num(u, key)} | {_num(m, key)} | "
                    f"{'' if s is None else f'{100 * s:.0f}%'} | {TARGETS[key]} |")  # fmt: skip
    for key in ("mean_ci_width", "max_ci_width"):
        for k in u[key]:
            rows.append(f"| {key} after {k} votes | {u[key][k]:.1f} | {m[key][k]:.1f} |  |  |")
    for key, digits in (("ci_coverage", 3), ("min_battles_share", 2), ("max_battles_share", 2),
                        ("min_battles", 0), ("max_battles", 0), ("votes_newcomer_10", 1),
                        ("votes_newcomer_established", 0)):  # fmt: skip
        rows.append(f"| {key} | {_num(u, key, digits)} | {_num(m, key, digits)} |  | "
                    f"{TARGETS.get(key, '')} |")  # fmt: skip
    seeds, votes = u["seeds"], u["setup"]["votes"]
    rows.append(f"\n{seeds} seeds, {votes:,} votes per run; worst seed: min_battles_share "
                f"{u['min_battles_share_worst']:.2f} (uniform), "
                f"{m['min_battles_share_worst']:.2f} (matchmaking).")  # fmt: skip
    return "\n".join(rows)


def _num(block: dict, key: str, digits: int = 0) -> str:
    value, missed = block.get(key), block.get(f"{key}_missed", 0)
    text = "never" if value is None else f"{value:,.{digits}f}"
    return f"{text} ({missed} missed)" if missed and value is not None else text
