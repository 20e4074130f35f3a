"""Judges with known biases: does the bias report find them, and does the correction help?

``python -m arena_core simulate --scenario judges`` draws an arena with known
true ratings (:func:`~arena_core.simulation.synthetic.normal_spread`), models
in families, and clips whose durations depend on the model and the prompt but
not on quality. Humans vote as the half-win Bradley-Terry model says, plus a
small edge for side A. Several judges each judge their own battles in both
orders, each with its own known biases (:class:`SimJudge`): discrimination
(how sharply it follows strength), taste (its own fixed errors per model),
position bias, self-preference for a family, duration preference; each draws
its verdicts on the two orders independently, or, mirrored, writes one decision
per battle twice, as a deterministic judge (pitch range, WER) does.

The whole log goes through :func:`~arena_core.judges.bias.measure_judges`, as
real votes would. Reported per judge, averaged over seeds with the standard
deviation across them: each true bias beside its estimate, and the Spearman
correlation of the judge's board with the true ratings before correction (its
own board) and after (its corrected board), and with the human board.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from arena_core.judges.bias import measure_judges
from arena_core.ratings.counts import A_WINS, B_WINS, BOTH_BAD, OUTCOME_NAMES, TIE
from arena_core.ratings.scale import ANCHOR
from arena_core.simulation.options import COUNT, MODELS, NON_NEGATIVE, real
from arena_core.simulation.synthetic import Truth, normal_spread, spearman, uniform_pairs

#: Seeded arenas when --seeds is not given.
DEFAULT_SEEDS = 20
#: Families the models are dealt into, in turn.
FAMILIES = ("north", "south", "east", "west")
#: Each outcome code read from the other side (a mirrored judge's second verdict), by code.
MIRROR = np.zeros(4, dtype=np.int64)
MIRROR[[A_WINS, B_WINS, TIE, BOTH_BAD]] = [B_WINS, A_WINS, TIE, BOTH_BAD]


@dataclass(frozen=True)
class SimJudge:
    """A simulated judge and its true biases (points on the logit scale: ``x / (ln 10 / 400)``)."""

    id: str
    discrimination: float = 1.0
    #: Standard deviation of the judge's own fixed error on each model (points).
    taste: float = 25.0
    #: Points added to side A, whatever is shown there.
    position: float = 0.0
    family: str | None = None
    #: Points added to the judge's family's model when it meets another family's.
    self_preference: float = 0.0
    #: Points per unit of the normalised duration difference (a - b) / (a + b).
    duration: float = 0.0
    #: Its verdict on the swapped order mirrors the first (a deterministic judge, as the
    #: pitch-range and WER judges are): one decision per battle written twice. Otherwise
    #: the two orders are judged independently. A mirrored judge has no position bias.
    mirrored: bool = False

    def __post_init__(self):
        if self.mirrored and self.position:
            raise ValueError(f"{self.id}: a mirrored judge cannot favour side A")


#: The default panel: one fair judge, one per bias, a noisy one, and one with everything.
JUDGES = (
    SimJudge("fair"),
    SimJudge("first", position=80.0),
    SimJudge("self", family="north", self_preference=150.0),
    SimJudge("long", duration=600.0),
    SimJudge("noisy", discrimination=0.4, taste=60.0),
    SimJudge("mixed", position=40.0, family="south", self_preference=100.0, duration=300.0),
)


@dataclass(frozen=True)
class Setting:
    """One simulated arena's size and human side."""

    n_models: int = 16
    #: Standard deviation of the true ratings (points).
    spread: float = 120.0
    human_votes: int = 3000
    #: Points the humans add to side A.
    human_a_side: float = 15.0
    battles_per_judge: int = 1500
    prompts: int = 200
    #: Log-normal spread of a model's typical clip duration, of a prompt's, and of one clip's.
    model_duration_sd: float = 0.3
    prompt_duration_sd: float = 0.4
    clip_duration_sd: float = 0.1
    judges: tuple[SimJudge, ...] = field(default=JUDGES)


@dataclass(frozen=True)
class Arena:
    """A simulated log and its truth."""

    votes: pd.DataFrame
    truth: np.ndarray
    families: dict[str, str]
    judge_families: dict[str, str | None]


def simulate_arena(setting: Setting, rng: np.random.Generator) -> Arena:
    """Draw the truth, the clips' durations, the human votes and each judge's verdicts."""
    n = setting.n_models
    truth = normal_spread(n, setting.spread, rng)
    models = [f"m{i:02d}" for i in range(n)]
    families = {m: FAMILIES[i % len(FAMILIES)] for i, m in enumerate(models)}
    typical = 4.0 * np.exp(rng.normal(0.0, setting.model_duration_sd, n))
    prompt_length = np.exp(rng.normal(0.0, setting.prompt_duration_sd, setting.prompts))
    frames = [_humans(setting, truth, typical, prompt_length, rng)]
    for j, judge in enumerate(setting.judges):
        frames.append(
            _judge(setting, judge, j, truth, typical, prompt_length, families, models, rng)
        )
    votes = pd.concat(frames, ignore_index=True)
    for side in ("a", "b"):
        votes[f"model_{side}"] = [models[i] for i in votes[f"model_{side}"]]
    return Arena(votes, truth, families, {jd.id: jd.family for jd in setting.judges})


def _battles(setting, count, typical, prompt_length, rng):
    a, b = uniform_pairs(setting.n_models, count, rng)
    prompt = rng.integers(0, setting.prompts, count)
    noise = rng.normal(0.0, setting.clip_duration_sd, (2, count))
    da = typical[a] * prompt_length[prompt] * np.exp(noise[0])
    db = typical[b] * prompt_length[prompt] * np.exp(noise[1])
    return a, b, prompt, da, db


def _sample(points: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Outcome codes for votes whose side A is ``points`` ahead (logit / NATURAL), drawn as
    :class:`Truth` draws them (draws half a win each), by giving each vote's side A a rating."""
    k = len(points)
    votes = Truth(np.r_[ANCHOR + points, ANCHOR])
    return votes.sample(np.arange(k), np.full(k, k), rng)


def _frame(a, b, outcome, prompt, da, db, kind, judge, battle) -> pd.DataFrame:
    return pd.DataFrame({
        "battle_id": battle, "model_a": a, "model_b": b,
        "vote": np.asarray(OUTCOME_NAMES, dtype=object)[outcome], "voter_kind": kind,
        "judge": judge, "prompt_id": [f"p{p}" for p in prompt],
        "model_a_duration_s": da, "model_b_duration_s": db,
    })  # fmt: skip


def _humans(setting, truth, typical, prompt_length, rng) -> pd.DataFrame:
    a, b, prompt, da, db = _battles(setting, setting.human_votes, typical, prompt_length, rng)
    outcome = _sample(truth[a] - truth[b] + setting.human_a_side, rng)
    battle = [f"h{i}" for i in range(len(a))]
    return _frame(a, b, outcome, prompt, da, db, "human", None, battle)


def _judge(setting, judge: SimJudge, j, truth, typical, prompt_length, families, models,
           rng) -> pd.DataFrame:  # fmt: skip
    """One judge's verdicts: each battle in the order drawn, then swapped."""
    own = truth + rng.normal(0.0, judge.taste, setting.n_models)
    mine = np.array([families[m] == judge.family for m in models])
    a, b, prompt, da, db = _battles(setting, setting.battles_per_judge, typical, prompt_length, rng)
    battle = np.array([f"j{j}b{i}" for i in range(len(a))], dtype=object)
    a, b, da, db = np.r_[a, b], np.r_[b, a], np.r_[da, db], np.r_[db, da]
    points = (judge.discrimination * (own[a] - own[b]) + judge.position
              + judge.self_preference * (mine[a].astype(float) - mine[b])
              + judge.duration * (da - db) / (da + db))  # fmt: skip
    outcome = _sample(points, rng)
    if judge.mirrored:  # the swapped order's verdict is the first one, read from the other side
        first = outcome[: len(battle)]
        outcome = np.r_[first, MIRROR[first]]
    return _frame(a, b, outcome, np.r_[prompt, prompt], da, db, "judge", judge.id,
                  np.r_[battle, battle])  # fmt: skip


def mirrored(judges: tuple[SimJudge, ...]) -> tuple[SimJudge, ...]:
    """The same panel as deterministic judges: mirrored verdicts, no position bias."""
    return tuple(replace(j, mirrored=True, position=0.0) for j in judges)


def run_once(setting: Setting, seed: int) -> dict:
    """One seeded arena through the bias report: per judge, truth beside estimate."""
    arena = simulate_arena(setting, np.random.default_rng(seed))
    report = measure_judges(arena.votes, arena.families, arena.judge_families)
    models = sorted(arena.families)
    truth = dict(zip(models, arena.truth, strict=True))
    human = _rho(report.human, truth)
    judges = []
    found = {b.judge: b for b in report.judges}
    for sim in setting.judges:
        bias = found[sim.id]
        duration = bias.duration
        judges.append({
            "id": sim.id,
            "position_bias_true": sim.position,
            "position_bias_est": bias.position.points if bias.position else None,
            "self_preference_true": sim.self_preference if sim.family else None,
            "self_preference_est": bias.self_term.points if bias.self_term else None,
            "duration_preference_true": sim.duration,
            "duration_preference_est": duration.points / duration.unit_sd if duration else None,
            "discrimination_true": sim.discrimination,
            "discrimination_est": bias.discrimination,
            "flip_share": bias.flip_share, "a_share": bias.a_share,
            "self_excess": bias.self_excess, "longer_share": bias.longer_share,
            "agreement": bias.agreement_prompt.share,
            "agreement_chance": bias.agreement_prompt.chance,
            "spearman_before": _rho(bias.board, truth),
            "spearman_after": _rho(bias.corrected, truth),
            "spearman_human_before": bias.spearman_human,
            "spearman_human_after": bias.spearman_human_corrected,
        })  # fmt: skip
    return {"judges": judges, "human_spearman": human, "consensus_spearman":
            _rho(report.consensus, truth), "human_a_side_est": report.human_position.points,
            "human_longer_share": report.human_longer_share}  # fmt: skip


def _rho(board: dict[str, float], truth: dict[str, float]) -> float:
    common = sorted(set(board) & set(truth))
    return spearman([board[m] for m in common], [truth[m] for m in common])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = Setting()
    group = parser.add_argument_group("judges scenario")
    group.add_argument(
        "--judges-models", type=MODELS, default=d.n_models, help="models in the arena"
    )
    group.add_argument("--judges-spread", type=NON_NEGATIVE, default=d.spread,
                       help="standard deviation of the true ratings (points)")  # fmt: skip
    group.add_argument("--judges-human-votes", type=COUNT, default=d.human_votes,
                       help="human votes per arena")  # fmt: skip
    group.add_argument("--judges-battles", type=COUNT, default=d.battles_per_judge,
                       help="battles per judge (each judged in both orders)")  # fmt: skip
    group.add_argument("--judges-human-a-side", type=real(), default=d.human_a_side,
                       help="points the humans give side A")  # fmt: skip
    group.add_argument("--judges-mirrored", action="store_true",
                       help="every judge mirrors its first verdict in the swapped order, as a "
                       "deterministic judge does (their position bias is then dropped)")  # fmt: skip


def run(args) -> dict:
    setting = replace(Setting(), n_models=args.judges_models, spread=args.judges_spread,
                      human_votes=args.judges_human_votes, battles_per_judge=args.judges_battles,
                      human_a_side=args.judges_human_a_side)  # fmt: skip
    if args.judges_mirrored:
        setting = replace(setting, judges=mirrored(setting.judges))
    seeds = range(args.seed, args.seed + (args.seeds or DEFAULT_SEEDS))
    runs = [run_once(setting, seed) for seed in seeds]
    judges = []
    for i, sim in enumerate(setting.judges):
        rows = [r["judges"][i] for r in runs]
        summary = {"id": sim.id}
        for key, value in rows[0].items():
            if key == "id":
                continue
            if key.endswith("_true"):
                summary[key] = value
                continue
            summary[key], summary[f"{key}_sd"] = _mean_sd([r[key] for r in rows])
        gains = [r["spearman_after"] - r["spearman_before"] for r in rows]
        summary["spearman_gain"], summary["spearman_gain_sd"] = _mean_sd(gains)
        judges.append(summary)
    human = {key: _mean_sd([r[key] for r in runs]) for key in
             ("human_spearman", "consensus_spearman", "human_a_side_est", "human_longer_share")}  # fmt: skip
    setting_json = asdict(setting)
    return {"judges": judges, "human": {k: v[0] for k, v in human.items()}
            | {f"{k}_sd": v[1] for k, v in human.items()}, "seeds": len(seeds),
            "setting": setting_json}  # fmt: skip


def _mean_sd(values) -> tuple[float | None, float | None]:
    vals = [v for v in values if v is not None and np.isfinite(v)]
    if not vals:
        return None, None
    return float(np.mean(vals)), float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0


def format_table(result: dict) -> str:
    s, h = result["setting"], result["human"]
    lines = [f"{s['n_models']} models (true sd {s['spread']:g} points), {s['human_votes']} human votes "
             f"(A-side {s['human_a_side']:g} points), {len(result['judges'])} judges x "
             f"{s['battles_per_judge']} battles in both orders; {result['seeds']} seeds; mean (sd "
             "across seeds). Biases in points; duration per unit of (a - b) / (a + b).", "",
             f"Humans: board vs truth Spearman {_f(h, 'human_spearman')}; A-side term "
             f"{_f(h, 'human_a_side_est', 1)} points (true {s['human_a_side']:g}). Judges' consensus "
             f"board vs truth: {_f(h, 'consensus_spearman')}.", "",
             "| judge | position true / est | self true / est | duration true / est | "
             "flip share | agreement (chance) | Spearman vs truth before | after | gain |",
             "|---|---|---|---|---:|---|---:|---:|---:|"]  # fmt: skip
    for r in result["judges"]:
        self_true = "-" if r["self_preference_true"] is None else f"{r['self_preference_true']:g}"
        lines.append(
            f"| {r['id']} | {r['position_bias_true']:g} / {_f(r, 'position_bias_est', 0)} "
            f"| {self_true} / {_f(r, 'self_preference_est', 0)} "
            f"| {r['duration_preference_true']:g} / {_f(r, 'duration_preference_est', 0)} "
            f"| {_f(r, 'flip_share', 2, sd=False)} "
            f"| {_f(r, 'agreement', 2, sd=False)} ({_f(r, 'agreement_chance', 2, sd=False)}) "
            f"| {_f(r, 'spearman_before')} | {_f(r, 'spearman_after')} | {_f(r, 'spearman_gain')} |"
        )
    return "\n".join(lines)


def _f(row: dict, key: str, digits: int = 3, sd: bool = True) -> str:
    value = row.get(key)
    if value is None:
        return "-"
    spread = row.get(f"{key}_sd")
    tail = f" ({spread:.{digits}f})" if sd and spread is not None else ""
    return f"{value:.{digits}f}{tail}"
