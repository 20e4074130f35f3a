"""The Leaderboard tab's Model view: one model's page for its authors.

Pure functions of :class:`~arena_core.analysis.model_report.ModelReport`: a summary, the
rating over time (a Plotly chart), results per opponent and per category with their 95%
intervals, its style against the arena's, and its recent battles.
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from arena_core.page.analysis_html import html_table
from arena_core.page.plots import ACCENT, MUTED, frame
from arena_core.page.presenters import rank_text
from arena_core.page.table import LEGEND, PROVENANCE_WORDS
from arena_core.registry.fields import http_url

#: The style measures, as named on the page.
_STYLE_NAMES = {"duration_s": "speech duration", "speech_rate": "speaking rate (words per second)",
                "lufs": "loudness as delivered", "sample_rate": "engine sample rate"}  # fmt: skip
#: Units of the style medians, as shown.
_STYLE_UNITS = {"duration_s": "{:.2f} s", "speech_rate": "{:.2f}", "lufs": "{:.1f} LUFS",
                "sample_rate": "{:.0f} Hz"}  # fmt: skip


def _pct(rate) -> str:
    if rate.rate is None:
        return '<span class="muted">–</span>'
    # The interval on its own line, in small type: beside the share it made the opponents'
    # table too wide for a phone, which cut off its last column ("Both bad").
    return (f"{100 * rate.rate:.0f}%<br><span class='muted ci'>({100 * rate.low:.0f}–"
            f"{100 * rate.high:.0f})</span>")  # fmt: skip


def _value(fmt: str, value) -> str:
    return '<span class="muted">–</span>' if value is None else fmt.format(value)


def summary_html(report, names: dict[str, str]) -> str:
    row, reg = report.board_row, report.registry or {}
    parts = [f"<h3>{escape(report.name)} <span class='muted'>({escape(report.model)})</span></h3>"]
    facts = []
    if row is not None and row.rating is not None:
        interval = (f" (95%: {row.ci_low:.0f}–{row.ci_high:.0f})"
                    if row.ci_low is not None and row.ci_high is not None else "")  # fmt: skip
        facts.append(f"Rating <b>{row.rating:.0f}</b>{interval}, {row.battles} battles")
        if row.battles and row.rank is not None:
            # An author's first question; the page showed every number of the row but it.
            groups = report.groups > 1  # "(group 1)" too, as the board table says
            facts.append(f"rank <b>{escape(rank_text(row, groups=groups))}</b>")
        if row.provenance in LEGEND:
            # The board's badge word and its meaning, not the internal key ("arena_thin").
            facts.append(
                f"{escape(PROVENANCE_WORDS[row.provenance])}: {escape(LEGEND[row.provenance])}"
            )
        if row.prior_shift is not None:
            facts.append(f"{row.prior_shift:+.0f} points from its published prior")
    else:
        facts.append("Not yet rated: no votes yet")
    if reg.get("license"):
        facts.append(f"licence {escape(str(reg['license']))}")
    if isinstance(reg.get("url"), str) and http_url(reg["url"]):
        url = escape(str(reg["url"]), quote=True)
        facts.append(f'<a href="{url}" target="_blank" rel="noopener">source</a>')
    if report.available is not None:
        facts.append("available here" if report.available else "not available here now")
    if report.median_latency_s is not None:
        facts.append(f"median generation {report.median_latency_s:.1f} s")
    parts.append("<p>" + " · ".join(facts) + "</p>")
    return "".join(parts)


def model_html(report, names: dict[str, str]) -> str:
    """Everything but the chart, as HTML."""
    # The model's own battles, not the arena's votes (``votes_used``): a model added to an
    # arena with votes showed its opponents' table empty, headers and no row.
    if not report.opponents:
        return ('<div class="model-view">' + summary_html(report, names)
                + '<p class="board-empty">No votes for it yet.</p></div>')  # fmt: skip
    opponents = [[escape(names.get(o.opponent, o.opponent)), str(o.battles), _pct(o.win),
                  _pct(o.tie), _pct(o.loss), _pct(o.both_bad)] for o in report.opponents]  # fmt: skip
    categories = [[escape(c.category or "none"), str(c.battles), _pct(c.win_rate),
                   _value("{:.0f}", c.rating)] for c in report.categories]  # fmt: skip
    style = [[escape(_STYLE_NAMES.get(s.field, s.field)),
              _value(_STYLE_UNITS.get(s.field, "{:.2f}"), s.model_median),
              _value(_STYLE_UNITS.get(s.field, "{:.2f}"), s.arena_median), str(s.votes)]
             for s in report.style if s.votes]  # fmt: skip
    recent = [[escape(b.ts[:16].replace("T", " ")), escape(names.get(b.opponent, b.opponent)),
               escape(b.side), escape(b.result), escape(b.prompt or "")] for b in report.recent]  # fmt: skip
    parts = [summary_html(report, names),
             "<h3>Against each opponent</h3><p class='muted'>Shares of their battles, with 95% "
             "Wilson intervals.</p>",
             html_table(["Opponent", "Battles", "Win", "Tie", "Loss", "Both bad"], opponents,
                    "Results per opponent")]  # fmt: skip
    if any(c.category for c in report.categories):  # one "none" row says nothing
        parts += ["<h3>Per category</h3>",
                  html_table(["Category", "Battles", "Win rate (decided)", "Rating"], categories,
                         "Results per category")]  # fmt: skip
    if style:
        parts += [
            "<h3>Style, against the arena's median</h3>",
            html_table(["Measure", "This model", "Arena", "Votes"], style, "Style"),
        ]
    if recent:
        parts += ["<h3>Recent battles</h3>",
                  html_table(["When (UTC)", "Opponent", "Side", "Result", "Prompt"], recent,
                         "Recent battles")]  # fmt: skip
    return '<div class="model-view">' + "".join(parts) + "</div>"


def history_chart(report) -> go.Figure | None:
    """Sequential Elo along the model's votes, and Bradley-Terry with its interval at
    snapshots, both against the arena's votes so far; None without votes."""
    if not report.elo_history:
        return None
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[p.arena_votes for p in report.elo_history],
                             y=[p.rating for p in report.elo_history], mode="lines",
                             name="sequential Elo", line={"color": MUTED, "width": 1.5}))  # fmt: skip
    snaps = [s for s in report.bt_history if s.rating is not None]
    if snaps:
        error = {"type": "data", "symmetric": False, "color": ACCENT,
                 "array": [(s.high - s.rating) if s.high is not None else 0 for s in snaps],
                 "arrayminus": [(s.rating - s.low) if s.low is not None else 0 for s in snaps]}  # fmt: skip
        fig.add_trace(go.Scatter(x=[s.arena_votes for s in snaps], y=[s.rating for s in snaps],
                                 mode="markers", name="Bradley-Terry (95% interval)",
                                 marker={"color": ACCENT, "size": 6}, error_y=error))  # fmt: skip
    fig = frame(fig, report.name, 8, note="rating as the arena's votes came in")
    fig.update_xaxes(title_text="arena votes", rangemode="tozero")
    fig.update_yaxes(title_text="rating")
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return fig
