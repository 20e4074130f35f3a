"""HTML of the Leaderboard tab's other views: the style-controlled board and the judges.

Pure functions of the analyses (:mod:`arena_core.analysis.boards`); the tables use the
board's own CSS classes so the views look like the default board.
"""

from __future__ import annotations

from html import escape

import numpy as np

from arena_core.analysis.boards import StyleBoard, StyleRow
from arena_core.analysis.text import COVARIATE_LABELS, coefficient_cells, fit_failed, left_out
from arena_core.judges.bias import BiasReport
from arena_core.ratings.ranks import rank_bands
from arena_core.ratings.style import Coefficient

#: Widest 95% interval (rating points per SD of the covariate) a style effect may have and
#: still be shown as an estimate. Wider than 800 points (±400: from 10-to-1 odds against to
#: 10-to-1 for, per SD) the votes bound neither its size nor its sign: at 13 votes the board
#: printed "+28221.2 points [-151792.5, +208234.9]" and "P(A wins) 1.000".
MAX_EFFECT_WIDTH = 800.0

STYLE_EXPLAINED = (
    "Ratings with the clips' style held equal: a Bradley-Terry fit of the human votes with "
    "speech duration, speaking rate (words per second of speech), loudness and the engine's "
    "sample rate as covariates, as LMArena's style control does for answer length. A model "
    "that wins because its clips are slower or longer drops here; what is left is preferred "
    "for something else. Each covariate's effect is in rating points per standard deviation "
    "of it, with its 95% interval. Votes cast before styles were recorded are left out, and "
    "each model starts from its prior at a fixed weight of 4 votes."
)
JUDGES_EXPLAINED = (
    "Automatic judges vote on battles like visitors, each battle twice with the sides "
    "swapped; their votes never count on the human board. <b>Agrees</b> is the share of "
    "their verdicts that match a human vote on the same pair and prompt (chance: a judge "
    "that flips a coin). <b>Flips</b> is the share of battles whose two verdicts pick the same "
    "side, not the same model: position bias. <b>Corrected</b> is the judge's board from one "
    "fit over all judges with a position, self-preference and duration term per judge, "
    "pulled toward the judges' consensus; its Spearman correlation with the human board is "
    "shown before and after (ρ). <b>For A</b> is the share of its decisive verdicts for the side "
    "shown first; <b>own family</b> how much more it favours models of its own family than "
    "humans do on the same pairs; <b>longer</b> the share of its decisive verdicts for the "
    "longer clip."
)


def html_table(head: list[str], rows: list[list[str]], caption: str) -> str:
    ths = "".join(f'<th scope="col">{escape(h)}</th>' for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<div class="board-wrap"><table class="board"><caption class="sr-only">'
            f"{escape(caption)}</caption><thead><tr>{ths}</tr></thead><tbody>{body}</tbody>"
            "</table></div>")  # fmt: skip


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return '<span class="muted">–</span>' if value is None else fmt.format(value)


def unbounded_note(c: Coefficient) -> str | None:
    """Why a covariate is shown as not estimated (None: it is shown with its figures): the
    votes leave it unbounded on a side, or its interval is wider than MAX_EFFECT_WIDTH."""
    if c.estimated:
        if c.high - c.low <= MAX_EFFECT_WIDTH:
            return None
        return (f"not estimated: its 95% interval is wider than {MAX_EFFECT_WIDTH:.0f} rating "
                "points per SD, so these votes bound neither its size nor its sign")  # fmt: skip
    if c.low is None and c.high is None:
        return None  # no votes inform it, or unbounded jointly: its cells say so
    return f"not estimated: {c.note or 'these votes do not bound it'}"


def coefficients_html(coefficients: tuple[Coefficient, ...]) -> str:
    """The covariates' effects; one the votes cannot bound reads "not estimated", with a note
    saying why, instead of figures that look precise and mean nothing."""
    rows, notes = [], []
    for c in coefficients:
        name = escape(COVARIATE_LABELS.get(c.name, c.name))
        why = unbounded_note(c)
        cells = ("not estimated", "–", "–") if why else coefficient_cells(c)
        rows.append([name, *(escape(cell) for cell in cells)])
        if why or c.note:
            notes.append(f"<p class='board-note'>{name}: {escape(why or c.note)}.</p>")
    return html_table(["Covariate", "Points", "95% interval", "P(A wins) at +1 SD"], rows,
                  "Style covariates") + "".join(notes)  # fmt: skip


def rank_band_texts(rows: tuple[StyleRow, ...]) -> list[str]:
    """Each row's plausible places, as the Votes view shows them ("1–3"): models whose 95%
    intervals overlap share a band (one group: the prior links every model)."""
    if not rows:
        return []
    best, worst = rank_bands([r.rating for r in rows], [r.low for r in rows],
                             [r.high for r in rows], np.zeros(len(rows), dtype=int))  # fmt: skip
    return [str(b) if b == w else f"{b}–{w}" for b, w in zip(best, worst, strict=True)]


def style_html(board: StyleBoard, names: dict[str, str]) -> str:
    if not board.votes_used:
        return ('<p class="board-empty">No human votes with recorded styles yet: the '
                "style-controlled board needs votes cast since styles are recorded.</p>")  # fmt: skip
    rows = [[band, escape(names.get(r.model, r.model)), f"{r.rating:.0f}",
             f"{r.low:.0f} to {r.high:.0f}"]
            for band, r in zip(rank_band_texts(board.rows), board.rows, strict=True)]  # fmt: skip
    note = f'<p class="board-note">{board.votes_used} human votes used'
    if board.left_out:
        note += f"; {board.left_out} left out (no style recorded)"
    if board.unrated:
        note += ". Not rated here (none of their votes has a style recorded): " + ", ".join(
            escape(names.get(m, m)) for m in board.unrated)  # fmt: skip
    unfitted = [f"{escape(COVARIATE_LABELS.get(n, n))} ({why})"
                for n, why in sorted(board.not_fitted.items())]  # fmt: skip
    if unfitted:
        note += ". Not fitted: " + ", ".join(unfitted)
    return (f'<p class="muted">{STYLE_EXPLAINED}</p>'
            + html_table(["Rank", "Model", "Rating", "95% interval"], rows, "Style-controlled board")
            + note + ".</p>" + coefficients_html(board.coefficients))  # fmt: skip


def judges_html(report: BiasReport, names: dict[str, str], judge_names: dict[str, str]) -> str:
    if not report.judges:
        return ('<p class="board-empty">No judge has voted in this arena yet. An operator '
                "runs one with <code>python -m arena_core judge</code> or sets ARENA_JUDGES.</p>")  # fmt: skip
    rows = []
    for j in report.judges:
        agree = j.agreement_prompt if j.agreement_prompt.verdicts else j.agreement_pair
        rows.append([escape(judge_names.get(j.judge, j.judge)), str(j.verdicts),
                     f"{_num(agree.share)} <span class='muted'>({_num(agree.chance)})</span>",
                     f"{_num(j.spearman_human)} → {_num(j.spearman_human_corrected)}",
                     _num(j.flip_share), _num(j.a_share),
                     _num(j.self_excess, "{:+.2f}"), _num(j.longer_share)])  # fmt: skip
    head = ["Judge", "Verdicts", "Agrees (chance)", "ρ humans → corrected", "Flips", "For A",
            "Own family", "Longer"]  # fmt: skip
    consensus = sorted(report.consensus.items(), key=lambda kv: -kv[1])
    board = [[str(k + 1), escape(names.get(m, m)), f"{v:.0f}",
              f"{report.human[m]:.0f}" if m in report.human else "–"]
             for k, (m, v) in enumerate(consensus)]  # fmt: skip
    parts = [f'<p class="muted">{JUDGES_EXPLAINED}</p>', html_table(head, rows, "Judges")]
    parts += [f"<p class='board-note'>{escape(judge_names.get(j.judge, j.judge))}: "
              f"{escape(left_out(j.not_fitted))}.</p>" for j in report.judges if j.not_fitted]  # fmt: skip
    parts += [f"<p class='board-note'>{escape(judge_names.get(j.judge, j.judge))}: "
              f"{escape(note)}.</p>" for j in report.judges for note in j.notes]  # fmt: skip
    if report.fit_error:
        parts.append(f"<p class='board-note'>{escape(fit_failed(report.fit_error))}</p>")
    else:
        kept = [
            judge_names.get(j.judge, j.judge) for j in report.judges if j.self_corrected is False
        ]
        title = "The judges' corrected consensus" + (
            f" (except for the self-preference of {', '.join(kept)})" if kept else "")  # fmt: skip
        parts += [f"<h3>{escape(title)} beside the human board</h3>",
                  html_table(["Rank", "Model", "Judges", "Humans"], board, "Judges' consensus")]  # fmt: skip
    human = report.human_position
    if human is not None and human.estimated:
        parts.append(f"<p class='board-note'>Human voters' side-A term: {human.points:+.1f} points "
                     f"({human.low:+.1f} to {human.high:+.1f}): between equal models, side A "
                     f"wins {human.win_probability:.1%} of the time (a tie counts half).</p>")  # fmt: skip
    elif human is not None:
        points, interval, _ = coefficient_cells(human)
        bound = "" if interval in ("-", "no votes inform it") else f" ({interval} points)"
        parts.append(f"<p class='board-note'>Human voters' side-A term: {escape(points)}"
                     f"{escape(bound)}: {escape(human.note)}.</p>")  # fmt: skip
    return "".join(parts)


COMPLEMENTARITY_EXPLAINED = (
    "Models that win on different prompts can be combined: a router picks one per prompt. "
    "For each pair of models that met the field on enough of the same prompts: the "
    "correlation of their per-prompt scores (their win rate against the rest of the field on "
    "each prompt), and the <b>gain</b> of picking the better of the two on each prompt over "
    "the better model alone, in points of win rate, after what noise alone would show, with "
    "its 95% interval. <b>Flagged</b>: the gain is beyond what noise gives at the 5% level."
)


def complementarity_html(report, names: dict[str, str]) -> str:
    """The per-prompt complementarity table of :func:`arena_core.analysis.insights.complementarity_report`."""
    if not report.pairs:
        why = ("no counted human vote carries a prompt id" if report.votes_used == 0 else
               f"no pair of models shares {report.params.min_overlap} prompts or more yet")  # fmt: skip
        return f'<p class="board-empty">Nothing to compare: {why}.</p>'
    rows = [[escape(names.get(p.model_a, p.model_a)), escape(names.get(p.model_b, p.model_b)),
             str(p.overlap), _num(p.spearman, "{:+.2f}"), f"{100 * p.oracle_gain:+.1f}",
             f"{100 * p.gain_low:+.1f} to {100 * p.gain_high:+.1f}",
             "✓" if p.flagged else ""] for p in report.pairs]  # fmt: skip
    note = (f'<p class="board-note">{report.votes_used} human votes over {report.prompts} '
            f"prompts; {report.no_prompt_id} without a prompt id (typed prompts) left out.</p>")  # fmt: skip
    return (f'<p class="muted">{COMPLEMENTARITY_EXPLAINED}</p>'
            + html_table(["Model", "Model", "Shared prompts", "ρ", "Gain (points)", "95% interval",
                      "Flagged"], rows, "Per-prompt complementarity") + note)  # fmt: skip
