"""The leaderboard as an HTML table that reads at a glance.

Columns are defined once (:data:`COLUMNS`): header, tooltip, cell and whether a
phone shows it. A column that is empty for every shown row is left out, a
provisional or unrated model carries a badge instead of a changed font, and the
rows that never played sit under their own heading. The ranking itself (bands,
groups, unrated, unavailable) is the board's: this module only shows it.

Filters hide rows, never re-rank them: a rank is the model's place on the whole
board, so the same model has the same rank under every filter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape

from arena_core.leaderboard import ESTABLISHED, PROVISIONAL, Board, LeaderboardRow
from arena_core.page.presenters import interval_text, rank_text
from arena_core.registry import Model

#: Weight filters: value -> label.
WEIGHTS = {"all": "All", "open": "Open", "closed": "Closed"}
#: Words in a licence that mean the weights are not published.
_CLOSED_WORDS = ("proprietary", "closed", "terms of service", "commercial api")


def open_weights(model: Model) -> bool:
    """Whether a model's weights are published: the registry states a licence for them
    that is not a proprietary one. A model with no stated licence counts as closed."""
    licence = (model.license or "").lower()
    return bool(licence) and not any(word in licence for word in _CLOSED_WORDS)


@dataclass(frozen=True)
class Context:
    """What a cell needs besides its row."""

    latency: Mapping[str, float | None]
    models: Mapping[str, Model]
    groups: bool


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    tip: str
    cell: Callable[[LeaderboardRow, Context], str]
    numeric: bool = True
    #: Shown on a phone-wide screen (the others are left out there to fit).
    phone: bool = True


def _model_cell(r: LeaderboardRow, ctx: Context) -> str:
    model = ctx.models.get(r.model_id)
    name = escape(r.model)
    if model is not None and model.url:
        name = (
            f'<a href="{escape(model.url, quote=True)}" target="_blank" rel="noopener">{name}</a>'
        )
    return name + "".join(f' <span class="badge {k}">{w}</span>' for k, w in _badges(r))


def _badges(r: LeaderboardRow) -> list[tuple[str, str]]:
    out = []
    if r.battles and r.status == PROVISIONAL:
        out.append(("provisional", "provisional"))
    if not r.available:
        out.append(("unavailable", "unavailable here"))
    return out


def _rank_cell(r: LeaderboardRow, ctx: Context) -> str:
    if not r.battles:
        return "–"
    band, _, group = rank_text(r, ctx.groups).partition(" (")
    return band + (f'<br><span class="muted group">({group}</span>' if group else "")


def _rating_cell(r: LeaderboardRow, ctx: Context) -> str:
    if r.rating is None:
        return "–"
    if not r.battles:
        return f'<span class="muted" title="Starting rating: no votes yet">{r.rating:.0f}</span>'
    return f"<b>{r.rating:.0f}</b>"


def _number(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "" if value is None else f"{value:.{digits}f}{suffix}"


COLUMNS = (
    Column("rank", "Rank", "Plausible places: models whose intervals overlap share a band.",
           lambda r, ctx: _rank_cell(r, ctx)),
    Column("model", "Model", "Provisional: its rating may still move a lot.", _model_cell,
           numeric=False),
    Column("rating", "Rating", "Bradley-Terry rating (1000 = anchor, +400 = 10-to-1 odds).",
           _rating_cell),
    Column("ci", "95% CI", "The rating lies in this range with 95% probability.",
           lambda r, ctx: interval_text(r) if r.battles else "", phone=False),
    Column("battles", "Battles", "Counted votes this model took part in.",
           lambda r, ctx: str(r.battles) if r.battles else ""),
    Column("win", "Win rate", "Wins over decided battles (ties and both-bad left out).",
           lambda r, ctx: _number(None if r.win_rate is None else 100 * r.win_rate, 0, "%"),
           phone=False),
    Column("record", "W–L–T–Bad", "Wins, losses, ties and both-bad votes.",
           lambda r, ctx: f"{r.wins}–{r.losses}–{r.ties}–{r.both_bad}" if r.battles else "",
           phone=False),
    Column("elo", "Seq. Elo", "Sequential Elo, replayed vote by vote: what moves after your vote.",
           lambda r, ctx: _number(r.elo) if r.battles else "", phone=False),
    Column("params", "Params", "Parameters, where the model's own documentation states them.",
           lambda r, ctx: escape(r.params or ""), phone=False),
    Column("elo_m", "Rating / M params", "Rating per million parameters.",
           lambda r, ctx: _number(r.elo_per_m_params, 2) if r.battles else "", phone=False),
    Column("latency", "Time (s)", "Median seconds to make one output, since this server started.",
           lambda r, ctx: _number(ctx.latency.get(r.model_id), 2), phone=False),
)  # fmt: skip


def shown_rows(board: Board, *, show_provisional: bool = True, weights: str = "all",
               models: Mapping[str, Model] | None = None) -> list[LeaderboardRow]:  # fmt: skip
    """The board's rows under the page's filters, in the board's order."""
    models = models or {}
    rows = []
    for r in board.rows:
        if not show_provisional and r.status != ESTABLISHED:
            continue
        model = models.get(r.model_id)
        if weights != "all" and model is not None and open_weights(model) != (weights == "open"):
            continue
        rows.append(r)
    return rows


def board_html(board: Board, rows: list[LeaderboardRow], latency: Mapping[str, float | None],
               models: Mapping[str, Model]) -> str:  # fmt: skip
    """The table of ``rows`` (see :func:`shown_rows`); a friendly line when none is left."""
    if not rows:
        return '<p class="board-empty">No model matches these filters.</p>'
    ctx = Context(latency, models, board.components > 1)
    cells = [[col.cell(r, ctx) for col in COLUMNS] for r in rows]
    keep = [k for k, col in enumerate(COLUMNS) if any(row[k] for row in cells)]
    head = "".join(
        f'<th scope="col" class="{_classes(COLUMNS[k])}" title="{escape(COLUMNS[k].tip)}">'
        f"{COLUMNS[k].header}</th>"
        for k in keep
    )
    body, unrated_started = [], False
    for r, row in zip(rows, cells, strict=True):
        if not r.battles and not unrated_started:
            unrated_started = True
            body.append(f'<tr class="section"><td colspan="{len(keep)}">Not yet rated: no votes '
                        "yet</td></tr>")  # fmt: skip
        tds = "".join(f'<td class="{_classes(COLUMNS[k])}">{row[k]}</td>' for k in keep)
        body.append(f'<tr class="{"unrated" if not r.battles else r.status}">{tds}</tr>')
    return (
        '<div class="board-wrap"><table class="board"><caption class="sr-only">Leaderboard of '
        f"{escape(board.arena)}</caption><thead><tr>{head}</tr></thead><tbody>"
        f"{''.join(body)}</tbody></table></div>"
    )


def _classes(col: Column) -> str:
    return f"c-{col.key}" + (" num" if col.numeric else "") + ("" if col.phone else " wide-only")
