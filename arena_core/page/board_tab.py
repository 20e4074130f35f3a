"""The Leaderboard tab: an arena's board with its filters and charts.

Layout and wiring only, like ``app.py`` (which calls :func:`board_tab`); the numbers
come from the service, the text and HTML from the other ``arena_core.page`` modules.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime

import gradio as gr

from arena_core.page import analysis_html, battle, model_html, plots, presenters, table, ui_text
from arena_core.page.assets import BOARD_ASK
from arena_core.page.model_audio import AUDIO_BATTLES, heard_battles, heard_label
from arena_core.snapshots import page as revision_page
from arena_core.snapshots.live import LiveBoards
from arena_core.snapshots.version import code_version

#: The board's views: the default, the style-controlled one, the automatic judges', and the
#: per-prompt complementarity of pairs of models (an insight for researchers).
VIEWS = {"Votes": "votes", "Style-controlled": "style", "Judges": "judges",
         "Complementarity": "complementarity", "Model": "model"}  # fmt: skip
#: Held while a session's newest request number is read and raised (requests of one session
#: are drawn on two threads at once); never while anything is drawn.
_ASKS = threading.Lock()


def board_tab(service, demo, tab, arena_in, offer, *, poll: float, tabs=None,
              boards: LiveBoards | None = None) -> None:  # fmt: skip
    """Lay out the Leaderboard tab's controls, table and charts, and wire their events
    (``boards``: the live boards with their revisions, shared with the API)."""
    arenas = service.registry.arenas
    offered = {a.id for a in offer.offered}
    first = offer.offered[0].id if offer.offered else arenas[0].id
    with gr.Row(equal_height=True, elem_id="board-controls", elem_classes="stack-on-phone"):
        # min_width: at scale 2 a laptop gave it ~200 px and "Japanese text-to-speech" ran
        # into the dropdown's arrow.
        board_arena = gr.Dropdown([(a.title, a.id) for a in arenas if a.id in offered] or
                                  [(a.title, a.id) for a in arenas], value=first,
                                  label="Arena", scale=2, min_width=250, elem_id="board-arena")  # fmt: skip
        # The first arena's categories from the start: a load's answer writing them landed
        # after an arena picked meanwhile had listed its own, and put the first's back.
        category = gr.Dropdown(**_category_choices(service, first), label="Prompts", scale=2)
        weights = gr.Radio([(label, key) for key, label in table.WEIGHTS.items()], value="all",
                           label="Weights", info=table.WEIGHTS_INFO, scale=3,
                           elem_id="board-weights")  # fmt: skip
        period = gr.Radio([(label, key) for key, (label, _) in presenters.PERIODS.items()],
                          value="all", label="Period", scale=3)  # fmt: skip
    with gr.Row(elem_classes="stack-on-phone"):
        view = gr.Radio(list(VIEWS.items()), value="votes", label="Board", scale=4,
                        elem_id="board-view")  # fmt: skip
        provisional = gr.Checkbox(True, label=ui_text.PROVISIONAL_TOGGLE, scale=4)
        # allow_custom_value: two arena switches racing (the Arena tab's, the tab's own
        # select) can send a model of the last arena while the session already holds the
        # new arena's choices, and Gradio refused the whole event with an error naming ids,
        # leaving the picker on the last arena. The handlers judge the value themselves:
        # ``switch`` keeps it only if the arena has it, ``model_view`` falls back the same way.
        model_pick = gr.Dropdown(_model_choices(service, first), label="Model", visible=False,
                                 scale=4, elem_id="board-model", allow_custom_value=True)  # fmt: skip
        refresh = gr.Button("↻ Refresh", size="sm", scale=0, min_width=110)
    summary = gr.Markdown(elem_id="board-summary")
    board_box = gr.HTML(elem_id="board-table")
    ratings = gr.Plot(show_label=False, visible=False, elem_id="chart-ratings")
    win_rates = gr.Plot(show_label=False, visible=False, elem_id="chart-wins")
    battle_counts = gr.Plot(show_label=False, visible=False, elem_id="chart-battles")
    heard = _heard_players()
    timer = gr.Timer(poll, active=not service.progress.done)
    outputs = [timer, summary, board_box, ratings, win_rates, battle_counts, *_flat(heard)]
    # Last, the request's number, filled in by the page (BOARD_ASK), and before it the
    # session's newest number: see ``show``.
    inputs = [board_arena, category, weights, period, provisional, view, model_pick,
              gr.State({}), gr.Number(visible=False, precision=0)]  # fmt: skip
    boards = boards or LiveBoards(service)

    def footer(arena_id, cat, window, revision, votes_used: int) -> str:
        """Under the board: the votes it counts, the log and code it came from, and the
        command that reprints it."""
        settings = boards.settings(arena_id, cat, window)
        return (table.counted_html(votes_used, revision.votes_read)
                + revision_page.revision_html(revision, code_version(), settings))  # fmt: skip

    def show(arena_id, category_value, weights_value, period_value, show_provisional, view_value,
             model_id, asks, number):  # fmt: skip
        """The board for the controls as they were when the page sent request ``number``; no
        change at all once the page has sent a later one (``asks`` holds the session's newest).

        Several events draw the board (the page's load, an arena followed from the Arena tab,
        the tab, each control) and their answers can arrive in any order: the board's first
        load, held up, landed after the Model view it was clicked for and left the Votes table
        under "Model". The number is the page's, counted when it asked, not the server's order
        of arrival: a request that reaches the server late is still known for an old one.
        """
        unchanged = (gr.skip(),) * len(outputs)
        if not _newest(asks, number):  # a later one was asked for (and maybe drawn) already
            return unchanged
        drawn = draw(arena_id, category_value, weights_value, period_value, show_provisional,
                     view_value, model_id)  # fmt: skip
        return drawn if _newest(asks, number) else unchanged

    def draw(arena_id, category_value, weights_value, period_value, show_provisional, view_value,
             model_id):  # fmt: skip
        window = presenters.period_window(period_value or "all", datetime.now(UTC))
        cat = category_value or None
        if view_value == "model" and service.progress.done:
            return (gr.Timer(active=False), "", *model_view(arena_id, model_id))
        if view_value != "votes" and service.progress.done:
            return (gr.Timer(active=False), "", other_view(arena_id, cat, view_value),
                    *[gr.update(visible=False)] * 3, *_hidden(heard))  # fmt: skip
        board, revision = boards.board(arena_id, cat, window)
        live, models = service.live[arena_id], {m.id: m for m in service.arena(arena_id).models}
        # The counts the board was computed from, not read again: a vote counted meanwhile
        # would give the charts a battle the table does not have.
        counts, ids = board.pair_counts, [e.id for e in live.entrants]
        sync = service.sync.status() if service.sync else None
        rows = table.shown_rows(board, show_provisional=show_provisional,
                                weights=weights_value or "all", models=models)  # fmt: skip
        # The charts draw exactly the rows the table shows: a filter that empties the table
        # hides them, and Weights or the provisional toggle narrow them as they do the table.
        shown = replace(board, rows=tuple(rows))
        charts = (plots.rating_chart(shown), plots.win_rate_heatmap(shown, ids, counts),
                  plots.battle_count_heatmap(shown, ids, counts))  # fmt: skip
        return (gr.Timer(active=not service.progress.done),
                presenters.board_summary(board, service.progress, sync,
                                         {m.id: m.name for m in models.values()}),
                table.board_html(board, rows, service.latency(arena_id), models,
                                 service.arena(arena_id).title)
                + (footer(arena_id, cat, window, revision, board.votes_used)
                   if service.progress.done else ""),
                *[gr.update(value=fig, visible=fig is not None) for fig in charts],
                *_hidden(heard))  # fmt: skip

    def model_view(arena_id: str, model_id: str | None) -> tuple:
        arena = service.arena(arena_id)
        ids = [m.id for m in arena.models]
        model_id = model_id if model_id in ids else ids[0]
        report = service.analyses.model(arena_id, model_id)
        status = service.pools[arena_id].status().get(model_id)
        report = replace(report, available=status.available if status else None,
                         median_latency_s=service.pools[arena_id].median_latency(model_id))  # fmt: skip
        names = {m.id: m.name for m in arena.models}
        chart = model_html.history_chart(report)
        clips = heard_battles(report, service.pools.get(arena_id), service.blinder)
        return (model_html.model_html(report, names),
                gr.update(value=chart, visible=chart is not None),
                *[gr.update(visible=False)] * 2, *_shown(heard, clips, names, report.name))  # fmt: skip

    def other_view(arena_id: str, cat: str | None, view_value: str) -> str:
        arena = service.arena(arena_id)
        names = {m.id: m.name for m in arena.models}
        if view_value == "style":
            if arena.modality != "audio":
                return '<p class="board-empty">Style control is for speech arenas.</p>'
            return analysis_html.style_html(service.analyses.style(arena_id, cat), names)
        if view_value == "complementarity":
            return analysis_html.complementarity_html(service.analyses.complementarity(arena_id),
                                                      names)  # fmt: skip
        judge_names = {j.id: j.name for j in service.registry.judges}
        return analysis_html.judges_html(service.analyses.judges(arena_id), names, judge_names)

    def categories(arena_id):
        return gr.update(**_category_choices(service, arena_id))

    def switch(arena_id, model_id, request: gr.Request):
        """Another arena on the board (picked here, or followed from the Arena tab): its
        categories, and its models in the Model view's picker, keeping the model picked when
        it belongs to that arena, else the shared link's (``?model=``) when it does, else its
        first. One update with the choices, before the board is drawn: the picker never holds
        a model of the last arena, which Gradio refused with an error naming ids, and the
        view never shows another.

        The link's model is read from the link itself: the switch its arena causes reads the
        picker before the link's answer has set it (the first arena's model is sent), so a
        link to any model of another arena but its first opened that first model's page."""
        choices = _model_choices(service, arena_id)
        ids = [model for _, model in choices]
        linked = request.query_params.get("model") if request is not None else None
        keep = next((m for m in (model_id, linked) if m in ids), next(iter(ids), None))
        return categories(arena_id), gr.update(choices=choices, value=keep)

    def arenas_shown(arena_id):
        return _arenas_shown(service, offered, arena_id)

    # Every event that draws the board numbers its request (see ``show``). always_last: an
    # event while the last one's board is still drawn runs once it is in, on the controls as
    # they are then. Gradio's default, "once", dropped it: the Model view clicked while the
    # tab's first board was drawn never came, and a filter picked then was never applied.
    drawing = {"inputs": inputs, "outputs": outputs, "js": BOARD_ASK,
               "trigger_mode": "always_last", "api_visibility": "private"}  # fmt: skip
    tab.select(arenas_shown, inputs=[board_arena], outputs=[board_arena],
               api_visibility="private", queue=False)  # fmt: skip
    board_arena.change(switch, inputs=[board_arena, model_pick], outputs=[category, model_pick],
                       api_visibility="private", queue=False).then(
        show, concurrency_limit=2, **drawing)  # fmt: skip
    # always_last: a view clicked while the last one's controls were on their way was
    # dropped (the default, "once"), and the Votes table came under Model's controls.
    view.input(lambda v: [gr.update(visible=v == "votes")] * 3 + [gr.update(visible=v == "model")],
               inputs=[view], outputs=[weights, period, provisional, model_pick],
               api_visibility="private", queue=False, trigger_mode="always_last")  # fmt: skip
    gr.on([refresh.click, category.input, weights.input, period.input, provisional.input,
           view.input, model_pick.input, tab.select, timer.tick], show, concurrency_limit=2,
          **drawing)  # fmt: skip
    # The board follows the arena the visitor battles in, in the page itself: as a request
    # its answer came after the Arena tab's header (Gradio runs one event's handlers in turn,
    # and the header reads a board), and an arena picked on the board meanwhile was set back.
    # On the visitor's own pick (input): the Arena tab's handlers of "change" do not delay it.
    arena_in.input(None, js="(arena) => arena || undefined", inputs=[arena_in],
                   outputs=[board_arena], api_visibility="private", queue=False)  # fmt: skip
    if tabs is not None:  # a shared link to a model's page: ?model=ID

        def deep_link(request: gr.Request):
            """The linked model's page, with its arena's categories in the same answer (the
            load's own answer with the first arena's, landing after the link's arena was
            switched to, listed them under the other); else no change. The Arena picker gets
            the arena among its choices: one not offered here (a hosted arena without its
            token) was set as a value the picker did not list, and every later event failed
            on it in Gradio, the pickers and the board showing "Error"."""
            wanted = request.query_params.get("model") if request is not None else None
            for arena in arenas if wanted else ():
                if any(m.id == wanted for m in arena.models):
                    shown = _arena_choices(service, offered, arena.id)
                    return (gr.Tabs(selected="leaderboard"),
                            gr.update(choices=shown, value=arena.id), "model",
                            gr.update(choices=_model_choices(service, arena.id), value=wanted,
                                      visible=True),
                            *[gr.update(visible=False)] * 3, categories(arena.id))  # fmt: skip
            return (gr.update(),) * 8

        demo.load(deep_link, outputs=[tabs, board_arena, view, model_pick, weights, period,
                                      provisional, category], api_visibility="private",
                  queue=False).then(show, **drawing)  # fmt: skip


def _newest(asks: dict, number: float | None) -> bool:
    """Whether request ``number`` is still the newest the page sent, as far as the server
    knows (``asks``: the session's, raised to ``number``). A request without a number (the
    page script did not run) counts as the newest."""
    if number is None:
        return True
    with _ASKS:
        asks["newest"] = max(asks.get("newest", number), number)
        return number >= asks["newest"]


def _arenas_shown(service, offered: set[str], arena_id: str):
    """The arenas with a board worth reading: those offered here, then any other with votes,
    and the one on the board (a shared link's). The choices only, never the value:
    ``arena_id`` is read when the tab opens, and an arena followed from the Arena tab in the
    meantime (its answer landing first) was set back to the one read."""
    return gr.update(choices=_arena_choices(service, offered, arena_id))


def _arena_choices(service, offered: set[str], arena_id: str) -> list[tuple[str, str]]:
    """The Arena picker's choices (see :func:`_arenas_shown`), ``arena_id`` always among them."""
    arenas = service.registry.arenas
    others = [a for a in arenas if a.id not in offered
              and (a.id == arena_id or service.board(a.id).votes_used)]  # fmt: skip
    shown = [a for a in arenas if a.id in offered] + others
    return [(a.title, a.id) for a in shown]


def _heard_players() -> tuple:
    """The model view's players of its recent battles: a heading, then per battle a line and
    the two clips (this model's, the opponent's), hidden until the view fills them."""
    title = gr.Markdown("### Recent battles, heard", visible=False, elem_id="model-heard")
    rows = []
    for k in range(AUDIO_BATTLES):
        label = gr.HTML(visible=False, elem_id=f"model-heard-{k}")
        with gr.Row(elem_classes="stack-on-phone"):
            own = gr.Audio(label="This model", interactive=False, visible=False, buttons=["download"],
                           elem_id=f"model-heard-{k}-own")  # fmt: skip
            other = gr.Audio(label="Opponent", interactive=False, visible=False, buttons=["download"],
                             elem_id=f"model-heard-{k}-other")  # fmt: skip
        rows.append((label, own, other))
    return title, rows


def _flat(heard) -> list:
    title, rows = heard
    return [title, *[c for row in rows for c in row]]


def _hidden(heard) -> list:
    return [gr.update(visible=False)] * len(_flat(heard))


def _shown(heard, clips, names, own_name: str) -> list:
    """Updates filling the players with ``clips`` (HeardBattle list) and hiding the rest."""
    _, rows = heard
    updates = [gr.update(visible=bool(clips))]
    for k in range(len(rows)):
        if k >= len(clips):
            updates += [gr.update(visible=False, value=None)] * 3
            continue
        c = clips[k]
        opponent = names.get(c.battle.opponent, c.battle.opponent)
        updates += [gr.update(value=heard_label(c, names), visible=True),
                    gr.update(value=(c.own.sample_rate, c.own.samples), visible=True,
                              label=own_name),
                    gr.update(value=(c.other.sample_rate, c.other.samples), visible=True,
                              label=opponent)]  # fmt: skip
    return updates


def _category_choices(service, arena_id: str) -> dict:
    """The Prompts filter's choices, value and visibility for an arena: all prompts, then its
    categories (languages by name), shown only when it has some."""
    live = service.live[arena_id]
    choices = battle.category_choices(live.categories, service.languages(arena_id))
    return {"choices": [("All prompts", ""), *choices], "value": "", "visible": bool(choices)}


def _model_choices(service, arena_id: str) -> list[tuple[str, str]]:
    return [(m.name, m.id) for m in service.arena(arena_id).models]
