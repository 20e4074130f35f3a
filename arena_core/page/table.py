"""The leaderboard as an HTML table that reads at a glance.

Columns are defined once (:data:`COLUMNS`): header, tooltip, cell and whether a
phone shows it. A column that is empty for every shown row is left out, a
rating's provenance (:mod:`arena_core.provenance`) is a badge after the model's
name (``prior``, ``blended``, ``provisional`` for votes too few to trust, none
for an established arena rating) explained in one line under the table, and the
rows that never played sit under their own heading. The ranking itself (bands,
groups, unrated, unavailable) is the board's: this module only shows it.

Filters hide rows, never re-rank them: a rank is the model's place on the whole
board, so the same model has the same rank under every filter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape

from arena_core.leaderboard import ESTABLISHED, Board, LeaderboardRow
from arena_core.page.presenters import interval_text, rank_text
from arena_core.provenance import ARENA, ARENA_THIN, BLENDED, PRIOR
from arena_core.registry import Model
from arena_core.registry.fields import http_url
from arena_core.registry.licences import open_licence

#: Weight filters: value -> label. "Other licence", not "closed": a licence the registry
#: does not state, or states in words not recognised as open, says nothing about whether
#: the weights can be had, and the board claims nothing it cannot source.
WEIGHTS = {"all": "All", "open": "Open licence", "closed": "Other licence"}
#: Under the filter: what the two licence options mean.
WEIGHTS_INFO = "Open: the registry states an open licence. Other: any other text, or none."


def open_weights(model: Model) -> bool:
    """Whether the board may claim a model's weights are open: its stated licence starts
    with a recognised open licence (:func:`arena_core.registry.licences.open_licence`).
    Any other text, or none, claims nothing: the model is listed under "Other licence"."""
    return open_licence(model.license) is not None


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
    if model is not None and model.url and http_url(model.url):  # the loader checks it too
        name = (
            f'<a href="{escape(model.url, quote=True)}" target="_blank" rel="noopener">{name}</a>'
        )
    return name + "".join(f' <span class="badge {k}" title="{escape(tip, quote=True)}">{w}</span>'
                          for k, w, tip in _badges(r))  # fmt: skip


def _badges(r: LeaderboardRow) -> list[tuple[str, str, str]]:
    """(class, word, tooltip) of each badge: the rating's provenance, then availability."""
    out = []
    if r.provenance in (PRIOR, BLENDED):
        out.append((r.provenance, r.provenance, _prior_tip(r)))
    elif r.provenance == ARENA_THIN:
        out.append(("provisional", "provisional", LEGEND[ARENA_THIN]))
    if not r.available:
        out.append(("unavailable", "unavailable here", "The model cannot run on this server now."))
    return out


def _prior_tip(r: LeaderboardRow) -> str:
    """Where the prior comes from and how much the votes weigh against it."""
    tip = f"{LEGEND[r.provenance]}. Source: {r.prior_source}."
    if r.battles and r.votes_share is not None:
        tip += f" The votes carry {100 * r.votes_share:.0f}% of this rating"
        tip += f" and moved it {r.prior_shift:+.0f} points." if r.prior_shift is not None else "."
    return tip


def _rank_cell(r: LeaderboardRow, ctx: Context) -> str:
    if not r.battles:
        return "–"
    band, _, group = rank_text(r, ctx.groups).partition(" (")
    return band + (f'<br><span class="muted group">({group}</span>' if group else "")


def _rating_cell(r: LeaderboardRow, ctx: Context) -> str:
    if r.rating is None:
        return "–"
    if not r.battles:
        tip = "From a published benchmark: no votes yet"
        return f'<span class="muted" title="{tip}">{r.rating:.0f}</span>'
    return f"<b>{r.rating:.0f}</b>"


#: What each rung of the provenance ladder means to a visitor (see arena_core.provenance).
LEGEND = {
    PRIOR: "from a published benchmark; no votes yet, or too few to outweigh it",
    BLENDED: "a published benchmark and the arena's votes, the votes weighing more",
    ARENA_THIN: "the arena's votes only, too few to trust yet: it may still move a lot",
    ARENA: "the arena's votes only, enough to trust",
}
#: The word for each rung, in a sentence (the Model view's summary).
PROVENANCE_WORDS = {PRIOR: "prior", BLENDED: "blended", ARENA_THIN: "provisional",
                    ARENA: "established"}  # fmt: skip
#: The word each rung shows as in the table (an established arena rating carries no badge).
_LEGEND_WORDS = {**PROVENANCE_WORDS, ARENA: "no badge"}


def _number(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "" if value is None else f"{value:.{digits}f}{suffix}"


COLUMNS = (
    Column("rank", "Rank", "Plausible places: models whose intervals overlap share a band.",
           lambda r, ctx: _rank_cell(r, ctx)),
    Column("model", "Model", "What a rating rests on: " + "; ".join(f"{w}: {LEGEND[k]}" for k, w in
           _LEGEND_WORDS.items()) + ".", _model_cell, numeric=False),
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
    Column("latency", "Time (s)", "Median seconds to make one output, since this server "
           "started; the latest are left out until their battles are closed: they would name "
           "the models of a battle before its vote.",
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
               models: Mapping[str, Model], title: str | None = None) -> str:  # fmt: skip
    """The table of ``rows`` (see :func:`shown_rows`); a friendly line when none is left.
    ``title``: the arena's, for the caption a screen reader reads (else its id)."""
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
            label = ("No votes yet" if any(x.provenance for x in rows if not x.battles) else
                     "Not yet rated: no votes yet")  # fmt: skip
            body.append(f'<tr class="section"><td colspan="{len(keep)}">{label}</td></tr>')
        tds = "".join(f'<td class="{_classes(COLUMNS[k])}">{row[k]}</td>' for k in keep)
        body.append(f'<tr class="{"unrated" if not r.battles else r.status}">{tds}</tr>')
    return (
        '<div class="board-wrap"><table class="board"><caption class="sr-only">Leaderboard of '
        f"{escape(title or board.arena)}</caption><thead><tr>{head}</tr></thead><tbody>"
        f"{''.join(body)}</tbody></table></div>{_legend(rows)}"
    )


def counted_html(votes_used: int, votes_read: int) -> str:
    """Above the footer: the votes this board counts beside the log's total, which the footer
    states for every arena at once (an arena without votes read "No votes yet" over a footer
    of "14 votes")."""
    votes = f"{votes_used:,} vote{'' if votes_used == 1 else 's'}"
    return (f'<p class="board-counted">This board counts {votes} (its arena, prompts and '
            f"period); the vote log below holds {votes_read:,} across all arenas.</p>")  # fmt: skip


def _legend(rows: list[LeaderboardRow]) -> str:
    """One line saying what the badges of these rows mean (only the rungs present)."""
    present = {r.provenance for r in rows}
    parts = [f"<b>{w}</b>: {LEGEND[k]}" for k, w in _LEGEND_WORDS.items() if k in present]
    return f'<p class="board-legend muted">{" · ".join(parts)}</p>' if parts else ""


def _classes(col: Column) -> str:
    return f"c-{col.key}" + (" num" if col.numeric else "") + ("" if col.phone else " wide-only")
