"""Leaderboard charts (Plotly figures, which Gradio's Plot component renders).

Ratings with their 95% intervals, and two pair-by-pair heatmaps in board order:
how often the row model beat the column model in decided battles, and how many
battles each pair has had. All three read the same board and counts as the table.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from arena_core.leaderboard import Board
from arena_core.page.presenters import win_fraction
from arena_core.ratings.counts import PairCounts

#: Chart height in pixels, enough for twenty model names.
HEIGHT = 560


def rating_chart(board: Board) -> go.Figure:
    """Each rated model's rating, in board order, with its 95% interval."""
    rows = [r for r in board.rows if r.rating is not None and r.battles > 0]
    fig = go.Figure(
        go.Scatter(
            x=[r.model for r in rows],
            y=[r.rating for r in rows],
            mode="markers",
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [r.ci_high - r.rating if r.ci_high is not None else 0 for r in rows],
                "arrayminus": [r.rating - r.ci_low if r.ci_low is not None else 0 for r in rows],
            },
            customdata=[r.battles for r in rows],
            hovertemplate="%{x}<br>rating %{y:.0f}, %{customdata} battles<extra></extra>",
        )
    )
    title = "Rating with 95% interval"
    if len(rows) < len(board.rows):
        title += " (models without a rating are left out)"
    fig.update_layout(title=title, yaxis_title="rating", height=HEIGHT, margin={"b": 160})
    return fig


def _heatmap(board: Board, ids: list[str], matrix: np.ndarray, title: str, text_format: str,
             colorscale: str) -> go.Figure:  # fmt: skip
    order = [ids.index(r.model_id) for r in board.rows]
    names = [r.model for r in board.rows]
    values = matrix[np.ix_(order, order)].astype(float)
    fig = go.Figure(
        go.Heatmap(
            z=values, x=names, y=names, colorscale=colorscale, texttemplate=text_format,
            hovertemplate="%{y} vs %{x}: %{z}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(title=title, height=HEIGHT + 120, xaxis_title="column model",
                      yaxis_title="row model", yaxis_autorange="reversed", xaxis_tickangle=-40)  # fmt: skip
    return fig


def win_rate_heatmap(board: Board, ids: list[str], counts: PairCounts) -> go.Figure:
    return _heatmap(board, ids, win_fraction(counts.wins),
                    "Share of decided battles the row model won", "%{z:.2f}", "RdBu")  # fmt: skip


def battle_count_heatmap(board: Board, ids: list[str], counts: PairCounts) -> go.Figure:
    return _heatmap(board, ids, counts.battles(), "Battles between each pair", "%{z:.0f}", "Blues")
