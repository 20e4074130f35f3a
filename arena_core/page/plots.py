"""Leaderboard charts (Plotly figures, which Gradio's Plot component renders).

Ratings with their 95% intervals, and two pair-by-pair heatmaps in board order:
how often the row model beat the column model in decided battles, and how many
battles each pair has had. All three read the same board and counts as the table,
and show only the models that have played: a board without votes has no charts
(the page shows its empty state instead), so no axis is ever drawn around nothing.

Axes are set, not left to Plotly's guesses: whole rating points with a margin
around the intervals (one model or equal ratings still get a readable span), a
win share from 0% to 100%, and battle counts from zero.
"""

from __future__ import annotations

import math
import textwrap
from html import escape

import numpy as np
import plotly.graph_objects as go

from arena_core.leaderboard import Board, LeaderboardRow
from arena_core.page.presenters import win_fraction
from arena_core.ratings.counts import PairCounts

#: Pixels per model row, and around the plot area, so any number of models fits.
ROW_PX, FRAME_PX = 40, 150
#: Smallest span of the rating axis (points), so equal ratings are not drawn on a
#: span of one point with fractional ticks.
MIN_SPAN = 100.0
#: Pixels the rating chart's names sit above their row's interval line.
NAME_LIFT = 5
#: Colours: the page's accent, and a muted one for provisional ratings.
ACCENT, MUTED = "#4f46e5", "#94a3b8"
#: Grid lines that read on a light and a dark page alike.
GRID = "rgba(148, 163, 184, 0.3)"
FONT = {"family": "Inter, ui-sans-serif, system-ui, sans-serif", "size": 13, "color": "#334155"}


#: Names longer than this break before their parenthesis, so labels leave room for the plot.
WRAP_AT = 22
#: Characters per line of a chart's title (16 px type, about 8 px a character) and of its
#: note (13 px): on a phone a chart is 370 px wide.
TITLE_CHARS, NOTE_CHARS = 38, 46
#: Pixels above the plot per line of a title, and for the space around it.
TITLE_LINE_PX, TITLE_ROOM_PX = 22, 30


#: Angle of the heatmaps' column names (degrees): one line each, steep enough that
#: neighbouring names clear each other down to columns ~25 px wide.
COLUMN_ANGLE = -50


def escaped(name: str) -> str:
    """A model name as Plotly text. Plotly reads annotations, category tick labels and hover
    text as HTML (``<a href>``, ``<b>``, entities), so the name is escaped to draw as written."""
    return escape(name, quote=False)


def label(name: str) -> str:
    """A model name as an axis label: long ones on two lines ("eSpeak NG<br>(US English)")."""
    return escaped(name).replace(" (", "<br>(", 1) if len(name) > WRAP_AT else escaped(name)


def _rated(board: Board) -> list[LeaderboardRow]:
    return [r for r in board.rows if r.battles > 0]


def title_lines(title: str, note: str = "") -> list[str]:
    """A chart's title broken into lines that fit a phone's chart, then ``note`` in smaller
    type, likewise: Plotly does not wrap a title, and one line ran off a 370 px chart (a long
    model name, or the rating chart's note on models left out). A word longer than a line is
    cut; each line is escaped after the cut (Plotly reads a title as HTML, and a name may
    hold ``<`` or ``&``)."""

    def wrap(text: str, width: int) -> list[str]:
        return [escape(line, quote=False)
                for line in textwrap.wrap(text, width, break_on_hyphens=False)]  # fmt: skip

    small = [f"<span style='font-size:13px'>{line}</span>" for line in wrap(note, NOTE_CHARS)]
    return [*wrap(title, TITLE_CHARS), *small]


def frame(fig: go.Figure, title: str, rows: int, note: str = "") -> go.Figure:
    """The page's look for a chart with ``rows`` rows, and its title (see :func:`title_lines`)
    hung from the chart's top with room below for every line: Plotly centres a title in the
    top margin, so more lines ran into the plot or off the top."""
    lines = title_lines(title, note)
    fig.update_layout(title={"text": "<br>".join(lines), "x": 0, "xanchor": "left", "y": 1,
                             "yref": "container", "yanchor": "top", "pad": {"t": 20, "l": 2},
                             "font": {"size": 16}},
                      height=FRAME_PX + ROW_PX * max(rows, 3) + TITLE_LINE_PX * len(lines),
                      template="plotly_white", font=FONT,
                      margin={"l": 10, "r": 20, "t": TITLE_ROOM_PX + TITLE_LINE_PX * len(lines),
                              "b": 40},
                      paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)")  # fmt: skip
    # Transparent plot area and half-tone grid: the chart sits on the page's own colour, light
    # or dark (the template's white plot area stayed white on the dark page).
    fig.update_xaxes(gridcolor=GRID, zerolinecolor=GRID)
    fig.update_yaxes(gridcolor=GRID, zerolinecolor=GRID)
    return fig


def rating_span(rows: list[LeaderboardRow]) -> tuple[float, float]:
    """The rating axis: every rating and interval bound, with a margin, at least MIN_SPAN wide."""
    values = [v for r in rows for v in (r.rating, r.ci_low, r.ci_high) if v is not None]
    low, high = min(values), max(values)
    pad = max(0.08 * (high - low), (MIN_SPAN - (high - low)) / 2, 10.0)
    return math.floor((low - pad) / 10) * 10, math.ceil((high + pad) / 10) * 10


def rating_chart(board: Board) -> go.Figure | None:
    """Each rated model's rating, best at the top, with its 95% interval; None without votes."""
    rows = [r for r in _rated(board) if r.rating is not None]
    if not rows:
        return None
    fig = go.Figure(
        go.Scatter(
            y=[escaped(r.model) for r in rows], x=[r.rating for r in rows], mode="markers",
            marker={"size": 11, "color": [ACCENT if r.status == "established" else MUTED
                                          for r in rows]},
            error_x={"type": "data", "symmetric": False, "color": "#64748b", "thickness": 1.5,
                     "array": [r.ci_high - r.rating if r.ci_high is not None else 0 for r in rows],
                     "arrayminus": [r.rating - r.ci_low if r.ci_low is not None else 0
                                    for r in rows]},
            customdata=[[r.battles, r.status] for r in rows],
            hovertemplate="%{y}<br>rating %{x:.0f} · %{customdata[0]} battles · "
                          "%{customdata[1]}<extra></extra>",
        )
    )  # fmt: skip
    note = "Grey: provisional." + (" Models without a finite rating are left out."
                                   if len(rows) < len(_rated(board)) else "")  # fmt: skip
    fig.update_xaxes(range=rating_span(rows), tickformat="d", nticks=8, title="rating",
                     automargin=True)  # fmt: skip
    # Names inside the plot, each above its row's interval: beside it, two-line names took
    # 300 of a phone's 390 pixels and left the intervals a sliver.
    # (Annotations, not "inside" tick labels: Plotly hides the rating ticks under those.)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    for r in rows:
        fig.add_annotation(text=escaped(r.model), x=0, xref="paper", xanchor="left",
                           y=escaped(r.model), yanchor="bottom", yshift=NAME_LIFT, showarrow=False,
                           font={"color": FONT["color"]})  # fmt: skip
    return frame(fig, "Rating with 95% interval", len(rows), note)


def _heatmap(board: Board, ids: list[str], matrix: np.ndarray, title: str, text: np.ndarray,
             **scale) -> go.Figure | None:  # fmt: skip
    rows = _rated(board)
    if not rows:
        return None
    order = [ids.index(r.model_id) for r in rows]
    fig = go.Figure(
        go.Heatmap(z=matrix[np.ix_(order, order)], x=[escaped(r.model) for r in rows],
                   y=[label(r.model) for r in rows],
                   text=text[np.ix_(order, order)], texttemplate="%{text}", xgap=1, ygap=1,
                   hovertemplate="%{y} vs %{x}: %{text}<extra></extra>", **scale)
    )  # fmt: skip
    fig.update_yaxes(autorange="reversed", automargin=True, title="row model")
    # Column names on one line at COLUMN_ANGLE: two-line names at -35° ran into each other.
    fig.update_xaxes(tickangle=COLUMN_ANGLE, automargin=True, title="column model")
    return frame(fig, title, len(rows) + 4)


def win_rate_heatmap(board: Board, ids: list[str], counts: PairCounts) -> go.Figure | None:
    """Share of decided battles the row model won against the column model (blank: none)."""
    share = win_fraction(counts.wins)
    text = np.where(np.isnan(share), "", np.char.add((np.nan_to_num(share) * 100).round()
                                                     .astype(int).astype(str), "%"))  # fmt: skip
    return _heatmap(board, ids, share, "Decided battles won by the row model", text,
                    zmin=0.0, zmax=1.0, colorscale="RdBu",
                    colorbar={"tickformat": ".0%", "title": "won"})  # fmt: skip


def battle_count_heatmap(board: Board, ids: list[str], counts: PairCounts) -> go.Figure | None:
    """Battles between each pair (blank: never met, a cell left uncoloured)."""
    battles = counts.battles().astype(float)
    text = np.where(battles > 0, battles.astype(int).astype(str), "")
    top = max(1.0, float(battles.max(initial=0)))
    met = np.where(battles > 0, battles, np.nan)
    return _heatmap(board, ids, met, "Battles between each pair", text, zmin=0.0, zmax=top,
                    colorscale="Blues", colorbar={"tickformat": "d", "title": "battles",
                                                  "dtick": max(1, math.ceil(top / 5))})  # fmt: skip
