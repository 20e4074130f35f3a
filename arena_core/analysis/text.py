"""Plain-text tables of the style-controlled board, the judges' report and the per-prompt
complementarity, for the CLI."""

from __future__ import annotations

import csv
import json
import textwrap

from arena_core.analysis.boards import StyleBoard
from arena_core.analysis.insights import ComplementarityReport
from arena_core.judges.bias import BiasReport
from arena_core.printable import emit, terminal_safe
from arena_core.ratings.style import Coefficient

#: What each style covariate is, for the reader of a table.
COVARIATE_LABELS = {
    "a_side": "side A (shown first)",
    "duration_s": "speech duration",
    "speech_rate": "speaking rate",
    "lufs": "loudness (LU)",
    "sample_rate": "engine sample rate",
}


def plain_table(head: list[str], rows: list[list[str]], left: int = 0) -> str:
    """Columns padded to their widest cell; column ``left`` left-aligned, the others right.

    A cell a terminal would garble is quoted with JSON's escapes, as the ``leaderboard``
    table prints names: these tables name models and judges by the votes' ids, any string
    (a newline in one split its row and printed a line of its own, an escape recoloured)."""
    rows = [[terminal_safe(c) for c in r] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=False)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))  # fmt: skip

    return "\n".join([line(head), *(line(r) for r in rows)])


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def coefficient_cells(c: Coefficient) -> tuple[str, str, str]:
    """Points, interval and P(A wins) of a coefficient as the CLI and the Space print them: an
    unbounded one as an infinite estimate with its one-sided bound (as the leaderboard shows
    an infinite rating), an uninformed one as no estimate."""
    if c.estimated:
        return _signed(c.points), f"[{c.low:+.1f}, {c.high:+.1f}]", f"{c.win_probability:.3f}"
    if c.low is not None:
        return "+inf", f"> {c.low:+.1f}", f"> {c.wp_low:.3f}"
    if c.high is not None:
        return "-inf", f"< {c.high:+.1f}", f"< {c.wp_high:.3f}"
    if c.informative:
        return "unbounded", "-", "-"
    return "-", "no votes inform it", "-"


def coefficient_lines(coefficients: tuple[Coefficient, ...]) -> str:
    rows = [[COVARIATE_LABELS.get(c.name, c.name), *coefficient_cells(c)] for c in coefficients]
    notes = [f"{COVARIATE_LABELS.get(c.name, c.name)}: {c.note}" for c in coefficients if c.note]
    table = plain_table(["covariate", "points", "95% interval", "P(A wins)"], rows)
    return "\n".join([table, *notes])


def _term_line(who: str, c: Coefficient) -> str:
    """One line for a side-A term (the humans')."""
    if c.estimated:
        return (f"{who}: {c.points:+.1f} points [{c.low:+.1f}, {c.high:+.1f}], P(A wins) between "
                f"equals {c.win_probability:.3f}")  # fmt: skip
    if not c.informative:
        return f"{who}: none ({c.note})"
    bound = c.low if c.low is not None else c.high
    if bound is None:
        return f"{who}: {c.note}"
    side, wp = ("at least", c.wp_low) if c.low is not None else ("at most", c.wp_high)
    return (f"{who}: {c.note}; {side} {bound:+.1f} points (one-sided), P(A wins) between equals "
            f"{side} {wp:.3f}")  # fmt: skip


def style_table(board: StyleBoard, names: dict[str, str]) -> str:
    rows = [[str(k + 1), names.get(r.model, r.model), f"{r.rating:.0f}",
             f"[{r.low:.0f}, {r.high:.0f}]"] for k, r in enumerate(board.rows)]  # fmt: skip
    where = board.arena + (f" / {board.category}" if board.category else "")
    voters = board.settings.get("voter_kind", "human")
    parts = [
        f"== {where}: style-controlled board ==",
        plain_table(["rank", "model", "rating", "95% interval"], rows, left=1),
        f"\n{board.votes_used} {'' if voters == 'all' else voters + ' '}votes used; "
        f"{board.left_out} left out (no style recorded: votes before schema 3, or not speech)",
        *_unrated_lines(board, names),
        *_selection_lines(board.settings),
        "\nStyle covariates: rating points per standard deviation of each (side A's term: per "
        "vote); P(A wins) between equal models one SD apart:",
        coefficient_lines(board.coefficients),
    ]
    parts += [f"not fitted: {n} ({why})" for n, why in sorted(board.not_fitted.items())]
    return "\n".join(parts)


def _unrated_lines(board: StyleBoard, names: dict[str, str]) -> list[str]:
    if not board.unrated:
        return []
    listed = ", ".join(names.get(m, m) for m in board.unrated)
    return [f"not rated here (none of their votes has a style recorded): {listed}"]


def _selection_lines(settings: dict) -> list[str]:
    """The settings that differ from the default board's, one line each."""
    lines = []
    if settings.get("judge"):
        lines.append(f"judge: {settings['judge']}")
    if settings.get("include_flagged"):
        lines.append("flagged votes and anomalous voters' votes counted")
    if settings.get("since") or settings.get("until"):
        lines.append(
            f"window: {settings.get('since') or 'start'} to {settings.get('until') or 'now'}"
        )
    if settings.get("half_life_days") is not None:
        lines.append(f"votes decay with a half-life of {settings['half_life_days']:g} days")
    if "prior_weight" in settings:
        lines.append(
            f"prior: each model's registry prior at {settings['prior_weight']:g} votes' worth"
        )
    return lines


def write_style_board(board: StyleBoard, fmt: str, out, names: dict[str, str]) -> None:
    """The style-controlled board in the CLI's three formats (CSV: one row per model, the
    columns named as on the default board)."""
    if fmt == "json":
        emit(json.dumps(board.to_json(), indent=1, allow_nan=False) + "\n", out)
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["rank", "model_id", "rating", "ci_low", "ci_high"])
        writer.writerows([k + 1, r.model, f"{r.rating:.2f}", f"{r.low:.2f}", f"{r.high:.2f}"]
                         for k, r in enumerate(board.rows))  # fmt: skip
    else:
        emit(style_table(board, names) + "\n", out)


def fit_failed(error: str) -> str:
    """What a report whose joint fit failed lacks, and why (the CLI's and the Space's words)."""
    return (
        f"The judges' joint fit failed ({error}): no fitted position, self or duration "
        "terms, discriminations, corrected boards or consensus; the other measures stand."
    )


def left_out(reason: str) -> str:
    """What a judge the joint fit left out lacks, and why (the CLI's and the Space's words)."""
    return f"no fitted terms, discrimination or corrected board: {reason}"


def _self_kept(report: BiasReport) -> str:
    """The judges whose self-preference the correction leaves in, for the consensus's title."""
    kept = [terminal_safe(j.judge) for j in report.judges if j.self_corrected is False]
    return f", except for the self-preference of {', '.join(kept)}" if kept else ""


def judges_table(report: BiasReport, arena: str, names: dict[str, str]) -> str:
    head = ["judge", "verdicts", "agree", "chance", "spearman", "after", "flips", "A share",
            "A term", "self excess", "longer", "discr."]  # fmt: skip
    rows = []
    for j in report.judges:
        agree = j.agreement_prompt if j.agreement_prompt.verdicts else j.agreement_pair
        rows.append([j.judge, str(j.verdicts), _share(agree.share), _share(agree.chance),
                     _share(j.spearman_human), _share(j.spearman_human_corrected),
                     _share(j.flip_share), _share(j.a_share),
                     coefficient_cells(j.position)[0] if j.position else "-",
                     _share(j.self_excess), _share(j.longer_share),
                     _share(j.discrimination)])  # fmt: skip
    consensus = sorted(report.consensus.items(), key=lambda kv: -kv[1])
    board = [[str(k + 1), names.get(m, m), f"{v:.0f}",
              f"{report.human[m]:.0f}" if m in report.human else "-"]
             for k, (m, v) in enumerate(consensus)]  # fmt: skip
    human = report.human_position
    parts = [
        f"== {arena}: judges ==",
        plain_table(head, rows),
        "\nagree: share of verdicts matching a human vote on the same pair and prompt (else "
        "pair), beside a coin-flipping judge's; spearman/after: its board against the human "
        "board before/after correction; flips: battles whose two verdicts pick the same side; "
        "A term: fitted position term (points); self excess: favour for its own family beyond "
        "humans'; longer: decisive verdicts for the longer clip; discr.: discrimination.",
    ]
    parts += [f"{terminal_safe(j.judge)}: {left_out(j.not_fitted)}"
              for j in report.judges if j.not_fitted]  # fmt: skip
    parts += [f"{terminal_safe(j.judge)}: {note}" for j in report.judges for note in j.notes]
    if report.fit_error:
        parts.append(f"\n{fit_failed(report.fit_error)}")
    else:
        parts += [f"\nConsensus of the judges (corrected{_self_kept(report)}) beside the human board:",
                  plain_table(["rank", "model", "judges", "humans"], board, left=1)]  # fmt: skip
    if human is not None:
        parts.append("\n" + _term_line("Humans' side-A term", human))
    if report.skipped:
        parts.append(
            "skipped rows: " + ", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items()))
        )
    return "\n".join(parts)


def _points(value: float) -> str:
    """A win-rate difference in percentage points."""
    return f"{100 * value:+.1f}"


def complementarity_table(report: ComplementarityReport, names: dict[str, str]) -> str:
    head = ["model a", "model b", "shared", "spearman", "gain", "95% interval", "naive",
            "floor", "p", "flagged"]  # fmt: skip
    rows = [[names.get(p.model_a, p.model_a), names.get(p.model_b, p.model_b), str(p.overlap),
             "-" if p.spearman is None else f"{p.spearman:+.2f}", _points(p.oracle_gain),
             f"[{_points(p.gain_low)}, {_points(p.gain_high)}]", _points(p.naive_gain),
             _points(p.noise_gain), f"{p.p_value:.3f}", "yes" if p.flagged else ""]
            for p in report.pairs]  # fmt: skip
    s = report.params
    parts = [f"== {report.arena}: per-prompt complementarity =="]
    if rows:
        parts.append(plain_table(head, rows))
    elif report.votes_used == 0:
        parts.append("no counted human vote carries a prompt id: there is nothing to compare")
    else:
        parts.append(f"no pair of models shares {s.min_overlap} prompts or more")
    notes = [
        f"{report.votes_used} human votes over {report.prompts} prompts; {report.no_prompt_id} "
        f"left out (no prompt id: typed prompts or imported battles); {report.too_few} pairs "
        f"share fewer than {s.min_overlap} prompts.",
        "Gains in percentage points of win rate against the rest of the field: how much picking "
        "the better of the two on each prompt would add to the better model alone. naive: with "
        "the noise; floor: what two models equal on every prompt show with this pair's noise; "
        "gain = naive - floor (about zero without a true gain, low for a true one); the "
        "interval allows for either reading of the noise. flagged: p <= "
        f"{s.alpha:g}, a naive gain beyond what noise "
        f"gives ({s.rounds} rounds).",
    ]
    return "\n".join(parts) + "\n\n" + "\n".join(textwrap.fill(n, 100) for n in notes)
