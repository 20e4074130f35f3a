"""The Space: layout and wiring. Every rule lives in ``arena_core`` (see ArenaService).

Run ``python app.py``; configuration comes from the environment (README, "Configuration").
Nothing happens at import time: ``build_demo`` lays out the page for a given service.
"""

import asyncio
import io
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import gradio as gr
from PIL import Image

from arena_core.integrity.identity import IdentityError, voter_hash, voter_identity
from arena_core.page import plots, presenters, speed, ui_text
from arena_core.space.config import Settings
from arena_core.space.service import ArenaError, ArenaService, BattleView
from arena_core.space.startup import build_service
from arena_core.space.tempfiles import FolderBudget
from arena_core.votes.schema import VOTES

#: Threads that open battles (each waits for its two generations, bounded by the pools).
BATTLE_WORKERS = 32
#: Threads that record votes: their own, so battles that generate or wait for their hold
#: never delay a vote (concurrent votes share an fsync, see ``VoteLog``).
VOTE_WORKERS = 8
#: Seconds between checks of the start-up replay while it runs.
LOADING_POLL = 2.0
#: Gradio's own clean-up of served files: every 5 minutes, those older than 15 (the
#: browser fetched them long before); FolderBudget bounds their total size as well.
DELETE_CACHE = (300, 900)

log = logging.getLogger("app")


def _refusal(exc: ArenaError | IdentityError) -> gr.Error:
    """A refusal the visitor reads ("you already voted"): one log line, no traceback."""
    log.info("refused: %s", exc)
    return gr.Error(str(exc), print_exception=False)


def build_demo(service: ArenaService, settings: Settings) -> gr.Blocks:
    """The whole page: Arena, Leaderboard (a tab per arena) and About."""
    arenas = service.registry.arenas
    with gr.Blocks(title=ui_text.TITLE, analytics_enabled=settings.analytics,
                   delete_cache=DELETE_CACHE) as demo:  # fmt: skip
        gr.Markdown(ui_text.HEADER)
        if settings.space_id:  # OAuth login only works on a Space
            gr.LoginButton()
        session = gr.State(None)
        with gr.Tabs():
            with gr.Tab("Arena", id="arena"):
                _arena_tab(service, settings, session, arenas)
            with gr.Tab("Leaderboard", id="leaderboard") as leaderboard_tab:
                boards = [_board_tab(service, arena.id, demo) for arena in arenas]
            with gr.Tab("About", id="about"):
                # A function, so each page load shows the models' state now (start-up checks).
                gr.Markdown(lambda: ui_text.about(service.registry, service.params,
                                                  service.model_status(), speed.load_rtf(),
                                                  speed.machine_note()))  # fmt: skip
        _refresh_boards(service, boards, leaderboard_tab)

        def leaderboard(arena_id: str, category: str = "") -> dict:
            """The board of one arena (and optionally one prompt category), as JSON rows."""
            try:
                return service.board(arena_id, category or None).to_json()
            except ArenaError as exc:
                raise _refusal(exc) from None

        gr.api(leaderboard, api_name="leaderboard", concurrency_limit=2)

        def status() -> dict:
            """Start-up state, for health checks and load tests: replay and warm-up done."""
            warmup = service.warmup
            return {"replay_done": service.progress.done,
                    "warmup_done": warmup is None or warmup.progress.done}  # fmt: skip

        gr.api(status, api_name="status", queue=False)
    return demo


def _arena_tab(service, settings, session, arenas):
    with gr.Row():
        arena_in = gr.Dropdown(
            [(a.title, a.id) for a in arenas], value=arenas[0].id, label="Arena", scale=1
        )
        prompt_in = gr.Textbox(label="Prompt", placeholder=ui_text.PROMPT_HINT, scale=3,
                               max_length=settings.max_prompt_chars * 2)  # fmt: skip
    new = gr.Button("New battle", variant="primary")
    prompt_shown = gr.Textbox(label="Prompt of this battle", interactive=False)
    outputs = {}
    with gr.Row():
        for side in "AB":
            with gr.Column():
                outputs[side] = (
                    gr.Audio(label=f"Model {side}", interactive=False, elem_id=f"audio-{side}"),
                    gr.Textbox(label=f"Model {side}", lines=10, interactive=False, visible=False),
                    gr.Image(label=f"Model {side}", interactive=False, visible=False),
                )
    with gr.Row():
        buttons = [
            gr.Button(presenters.VOTE_WORDS[v], interactive=False, elem_id=f"vote-{v}")
            for v in VOTES
        ]
    status = gr.Markdown(elem_id="status")
    reveal_json = gr.JSON(visible=False)
    next_battle = gr.Button("Next battle", variant="primary", visible=False)
    media = [*outputs["A"], *outputs["B"]]
    media = [media[0], media[3], media[1], media[4], media[2], media[5]]  # audio, text, image pairs

    # The API endpoints /new_battle and /vote run outside Gradio's queue (queue=False): the
    # queue's bookkeeping doubles a request's server time, which capped the arena well below
    # 100 votes a second on two cores. The page's own clicks go through the queue (its
    # refusal toasts need it; people click slowly) and call the same handlers. Both are
    # async and run the work on executors of their own, so a flood of typed prompts cannot
    # take the threads votes need, and the typed-prompt hold is awaited, not slept.
    battle_workers = ThreadPoolExecutor(BATTLE_WORKERS, thread_name_prefix="battle")
    vote_workers = ThreadPoolExecutor(VOTE_WORKERS, thread_name_prefix="vote")

    async def start(state, arena_id, prompt):
        try:
            view = await asyncio.get_running_loop().run_in_executor(
                battle_workers, service.new_battle, arena_id, prompt or None
            )
        except ArenaError as exc:
            raise _refusal(exc) from None
        if view.hold > 0:
            await asyncio.sleep(view.hold)
        state = {
            "handle": view.handle,
            "modality": view.modality,
            "played": [False, False],
            "voted": False,
        }
        return state, view.prompt, *_media(view)

    def ready(state):
        audio = state["modality"] == "audio"
        hint = ui_text.LISTEN_HINT if audio else ui_text.READ_HINT
        shown = [
            gr.update(visible=kind == state["modality"])
            for kind in ("audio", "text", "image")
            for _ in "AB"
        ]
        return (
            *[gr.update(interactive=not audio) for _ in buttons],
            hint,
            gr.update(visible=False),
            *shown,
        )

    gr.on([new.click, next_battle.click], lambda: (ui_text.WORKING, *[gr.update(interactive=False)] * 4),
          outputs=[status, *buttons], api_visibility="private", queue=False)  # fmt: skip
    battle_in, battle_out = [session, arena_in, prompt_in], [session, prompt_shown, *media]
    gr.on([new.click, next_battle.click], start, inputs=battle_in, outputs=battle_out,
          api_visibility="private", concurrency_limit=BATTLE_WORKERS, concurrency_id="battle").then(
        ready, inputs=[session], outputs=[*buttons, status, next_battle, *media], api_visibility="private"
    )  # fmt: skip
    api_battle = gr.Button(visible=False)
    api_battle.click(
        start, inputs=battle_in, outputs=battle_out, api_name="new_battle", queue=False
    )

    def played(side):
        def handler(state):
            if not state or state["voted"]:
                return state, *[gr.update()] * 4
            state["played"][side] = True
            return state, *[gr.update(interactive=all(state["played"]))] * 4

        return handler

    for k, side in enumerate("AB"):
        outputs[side][0].stop(played(k), inputs=[session], outputs=[session, *buttons],
                              api_visibility="private")  # fmt: skip

    async def cast(state, choice, request: gr.Request, profile: gr.OAuthProfile | None = None):
        # The signed-in Hugging Face user (OAuth, on a Space) or Gradio's own login; else the
        # address the trusted proxies saw. Only the salted hash leaves this function.
        username = profile.username if profile is not None else request.username
        try:
            voter = voter_hash(settings.voter_salt, voter_identity(
                settings.identity, username=username, headers=request.headers,
                client_host=request.client.host if request.client else None))  # fmt: skip
            reveal = await asyncio.get_running_loop().run_in_executor(
                vote_workers, service.vote, (state or {}).get("handle"), choice, voter
            )
        except (ArenaError, IdentityError) as exc:
            raise _refusal(exc) from None
        return (
            {**state, "voted": True},
            presenters.reveal_markdown(reveal),
            presenters.reveal_data(reveal),
        )

    def after_vote():
        return *[gr.update(interactive=False)] * 4, gr.update(visible=True)

    def vote_for(choice):
        async def handler(state, request: gr.Request, profile: gr.OAuthProfile | None = None):
            return await cast(state, choice, request, profile)

        return handler

    reveal_out = [session, status, reveal_json]
    for choice, button in zip(VOTES, buttons, strict=True):
        button.click(vote_for(choice), inputs=[session], outputs=reveal_out, api_visibility="private",
                     concurrency_limit=VOTE_WORKERS, concurrency_id="vote").then(
            after_vote, outputs=[*buttons, next_battle], api_visibility="private")  # fmt: skip
    choice_in = gr.Radio(list(VOTES), visible=False)
    api_vote = gr.Button(visible=False)
    api_vote.click(
        cast, inputs=[session, choice_in], outputs=reveal_out, api_name="vote", queue=False
    )


def _media(view: BattleView) -> list:
    """Values for the (audio, text, image) pairs of components: this arena's kind, None elsewhere."""
    values = []
    for kind in ("audio", "text", "image"):
        for out in (view.output_a, view.output_b):
            if kind != view.modality:
                values.append(None)
            elif kind == "audio":
                values.append((out.sample_rate, out.samples))
            elif kind == "text":
                values.append(out.text)
            else:
                values.append(Image.open(io.BytesIO(out.image_bytes)))
    return values


def _board_tab(service, arena_id, demo):
    arena = service.live[arena_id]
    with gr.Tab(service.registry.arena(arena_id).title) as tab:
        with gr.Row():
            category = gr.Dropdown([("All prompts", "")] + [(c, c) for c in arena.categories], value="",
                                   label="Category", visible=bool(arena.categories))  # fmt: skip
            period = gr.Radio([(label, key) for key, (label, _) in presenters.PERIODS.items()],
                              value="all", label="Period")  # fmt: skip
            provisional = gr.Checkbox(True, label="Show provisional models")
            refresh = gr.Button("Refresh", size="sm")
        summary = gr.Markdown(elem_id=f"summary-{arena_id}")
        table = gr.Dataframe(interactive=False, wrap=True, elem_id=f"board-{arena_id}", max_height=900,
                             column_widths=presenters.TABLE_WIDTHS, datatype=presenters.TABLE_TYPES)  # fmt: skip
        ratings = gr.Plot(show_label=False)
        win_rates = gr.Plot(show_label=False)
        battle_counts = gr.Plot(show_label=False)
    inputs = [category, provisional, period]
    outputs = [summary, table, ratings, win_rates, battle_counts]

    def show(category_value, show_provisional, period_value):
        cat = category_value or None
        window = presenters.period_window(period_value or "all", datetime.now(UTC))
        board = service.board(arena_id, cat, window=window)
        counts = arena.pair_counts(cat, window)
        ids = [e.id for e in arena.entrants]
        sync = service.sync.status() if service.sync else None
        return (
            presenters.board_summary(board, service.progress, sync),
            presenters.board_table(board, service.latency(arena_id), show_provisional),
            plots.rating_chart(board),
            plots.win_rate_heatmap(board, ids, counts),
            plots.battle_count_heatmap(board, ids, counts),
        )

    gr.on([refresh.click, category.change, provisional.change, period.change, tab.select, demo.load],
          show, inputs=inputs, outputs=outputs, api_visibility="private", concurrency_limit=2)  # fmt: skip
    return show, inputs, outputs


def _refresh_boards(service, boards, leaderboard_tab):
    """Refresh every board when the Leaderboard tab opens, and every few seconds while the
    start-up replay runs (the timer then switches itself off)."""
    timer = gr.Timer(LOADING_POLL, active=not service.progress.done)
    inputs = [c for _, ins, _ in boards for c in ins]
    outputs = [c for _, _, outs in boards for c in outs]

    def refresh(*values):
        updates, start = [], 0
        for show, ins, _ in boards:
            updates += show(*values[start : start + len(ins)])
            start += len(ins)
        return gr.Timer(active=not service.progress.done), *updates

    gr.on([timer.tick, leaderboard_tab.select], refresh, inputs=inputs, outputs=[timer, *outputs],
          api_visibility="private", concurrency_limit=2)  # fmt: skip


def main() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = Settings.from_env()
    service = build_service(settings)
    if service.sync is not None:
        service.sync.flush_on_sigterm()
    service.start_loading()
    if service.warmup is not None:
        service.warmup.start()
    demo = build_demo(service, settings)
    FolderBudget(demo.GRADIO_CACHE, settings.temp_mb * 1024 * 1024).start()
    demo.queue(default_concurrency_limit=8).launch(**launch_options(settings))


def launch_options(settings: Settings) -> dict:
    """``launch()`` arguments: nothing open that the operator did not ask for."""
    return {
        "theme": gr.themes.Soft(),
        # The app takes no uploads: refuse every file with content.
        "max_file_size": 0,
        # /monitoring shows function names and success rates to anyone.
        "enable_monitoring": settings.monitoring,
    }


if __name__ == "__main__":
    main()
