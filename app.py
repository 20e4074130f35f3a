"""The Space: layout and wiring. Every rule lives in ``arena_core`` (see ArenaService).

Run ``python app.py``; configuration comes from the environment (README, "Configuration").
Nothing happens at import time: ``build_demo`` lays out the page for a given service.
What the page says and shows is built by ``arena_core.page`` (pure functions), and the
handlers that open battles and take votes for the API and the page are
``arena_core.page.handlers``; the browser-side behaviour (players, lock, shortcuts) is
``arena_core/page/assets/arena/`` (one script in parts, ``assets.SCRIPT_PARTS``).
"""

import logging
import threading
import time
from pathlib import Path

import gradio as gr
from gradio import utils as gr_utils

from arena_core.backends import BackendConfigError
from arena_core.integrity.identity import IdentityError
from arena_core.page import assets, battle, media, speed, ui_text, visit
from arena_core.page.arena_tab import arena_layout
from arena_core.page.board_tab import board_tab
from arena_core.page.handlers import BATTLE_WORKERS, VOTE_WORKERS, Battles, refusal
from arena_core.registry import RegistryError
from arena_core.snapshots.live import LiveBoards
from arena_core.space.battles import ALREADY_VOTED, LISTENING
from arena_core.space.clips import ClipStore
from arena_core.space.config import ConfigError, Settings
from arena_core.space.service import ArenaError, ArenaService
from arena_core.space.startup import (
    build_service,
    start_audio_publisher,
    start_judges,
    start_snapshots,
)
from arena_core.space.tempfiles import FolderBudget
from arena_core.space.webstack import forget_missing_matplotlib, peer_is_the_socket
from arena_core.votes.schema import VOTES

#: Seconds between checks of the start-up replay while it runs.
LOADING_POLL = 2.0
#: Gradio's own clean-up of served files: every 5 minutes, those older than 15 (the
#: browser fetched them long before); FolderBudget bounds their total size as well.
DELETE_CACHE = (300, 900)
#: Seconds a refusal's toast stays up (it is repeated under the buttons).
WARNING_SECONDS = 6
#: The ticket of a battle refused before it was asked for (a typed prompt the service would
#: refuse): no battle number is ever negative, so page_start leaves the page as it is.
NO_TICKET = -1

log = logging.getLogger("app")


def build_demo(service: ArenaService, settings: Settings, clips: ClipStore,
               loading: threading.Thread | None = None) -> gr.Blocks:  # fmt: skip
    """The whole page: Arena, Leaderboard and About. Launch it with :func:`launch_options`
    for the same ``clips``: they hold the battles' audio, and their route serves it.
    ``loading`` is the start-up replay's thread: once it ends, the boards' revision is read
    in the background, so the first visitor of the Leaderboard does not wait for it."""
    statuses = {a.id: service.pools[a.id].status() for a in service.registry.arenas}
    offer = battle.offer(service.registry.arenas, statuses)
    boards = LiveBoards(service)  # the Leaderboard tab's and the API's, with their revisions
    if loading is not None:
        boards.warm(loading)
    with gr.Blocks(title=ui_text.TITLE, analytics_enabled=settings.analytics,
                   delete_cache=DELETE_CACHE) as demo:  # fmt: skip
        with gr.Row(elem_id="top"):
            gr.HTML(ui_text.HEADER)
            if settings.space_id:  # OAuth login only works on a Space
                gr.LoginButton(scale=0)
        # The session's battle and votes, one dict per visitor updated in place (page/visit.py).
        session = gr.State({})
        with gr.Tabs() as tabs:
            with gr.Tab("Arena", id="arena", elem_id="arena-tab"):
                arena_in = _arena_tab(service, settings, session, offer, clips, demo)
            with gr.Tab("Leaderboard", id="leaderboard", elem_id="board-tab") as leaderboard_tab:
                board_tab(service, demo, leaderboard_tab, arena_in, offer, poll=LOADING_POLL,
                          tabs=tabs, boards=boards)  # fmt: skip
            with gr.Tab("About", id="about", elem_id="about-tab"):
                about = gr.Markdown()
            # Filled at each page load, so it shows the models' state now (start-up checks);
            # a load event of our own, kept out of the API (a callable value is public).
            demo.load(lambda: ui_text.about(service.registry, service.params,
                                            service.model_status(), speed.load_rtf(),
                                            speed.machine_note()),
                      outputs=about, queue=False, api_visibility="private")  # fmt: skip

        def leaderboard(arena_id: str, category: str = "") -> dict:
            """The board of one arena (and optionally one prompt category) as
            ``leaderboard --format json`` prints it: rows, then its revision, code version
            and settings."""
            try:
                return boards.document(arena_id, category or None)
            except ArenaError as exc:
                raise refusal(exc) from None

        gr.api(leaderboard, api_name="leaderboard", concurrency_limit=2)

        def status() -> dict:
            """Start-up state, for health checks and load tests: replay and warm-up done, and
            no rebuild of the boards after a flagged voter running (rebuild.py)."""
            warmup = service.warmup
            return {"replay_done": service.progress.done,
                    "warmup_done": warmup is None or warmup.progress.done,
                    "boards_settled": not service.rebuilds.running}  # fmt: skip

        gr.api(status, api_name="status", queue=False)
    # Gradio records each clip's path as a file it sent and never forgets it (space/clips.py).
    clips.forget_in(lambda: demo.temp_file_sets)
    return demo


def _arena_tab(service, settings, session, offer, clips, demo):
    page = arena_layout(service, settings, offer)
    battles = Battles(service, settings, clips, demo.GRADIO_CACHE)
    _wire_api(battles, page, session, offer)
    _wire_page(battles, page, session, demo)
    return page.arena_in


def _wire_api(battles: Battles, page, session, offer) -> None:
    """/new_battle(arena, prompt, language) and /vote(choice): hidden buttons, no queue."""
    first = (offer.offered or battles.service.registry.arenas)[0].id
    inputs = [session, gr.Textbox(first, label="Arena", visible=False),
              gr.Textbox("", label="Prompt", visible=False),
              gr.Textbox("", label="Language", visible=False)]  # fmt: skip

    async def start(state, arena_id, prompt, language, request: gr.Request):
        state, shown, *values = await battles.start(state, arena_id, prompt, language, request)
        return state, shown, *media.serialized(values)

    # No pre- or post-processing by the components: their values are plain already (the
    # media serialised above), and each component's processing is a hop to a worker thread,
    # a tenth of a battle's server time under load.
    raw = {"queue": False, "preprocess": False, "postprocess": False}
    gr.Button(visible=False).click(start, inputs=inputs,
                                   outputs=[session, page.prompt_shown, *page.media],
                                   api_name="new_battle", **raw)  # fmt: skip
    gr.Button(visible=False).click(battles.cast,
                                   inputs=[session, gr.Radio(list(VOTES), visible=False)],
                                   outputs=[session, gr.Markdown(visible=False),
                                            gr.JSON(visible=False)],
                                   api_name="vote", **raw)  # fmt: skip


def _wire_page(battles: Battles, page, session, demo) -> None:
    """The page's own events: battles, votes, players, and the arena picker.

    The session's state names the battle on screen (``page/visit.py``); asking for a battle
    or picking another arena clears it at once, before anything is generated. What a battle
    or a vote sends back lands on the page only while the state still names the battle it
    belongs to: a reveal that lands on a newer battle would label its players with the last
    battle's models. A vote counts for the battle on screen when its button was pressed,
    even if the next battle was asked for before the server handled it.
    """

    def page_begin(state, prompt, arena_id):
        refusal = battle.prompt_refusal(prompt, battles.settings.max_prompt_chars)
        if refusal is not None:  # before anything is cleared: the battle on screen stays
            # Said beside the prompt box and under the buttons (page.prompt_refused): a toast
            # needs the queue, which this event skips, so gr.Warning here showed nothing.
            return NO_TICKET, gr.skip(), *page.prompt_refused(refusal)
        # The arena on screen is recorded here too: both calls skip the queue and may be
        # served in either order, so the pick's own call can come after this one.
        visit.leave(state, time.monotonic(), shown=arena_id)
        # The request's number goes back to the page, which sends it with the battle's own
        # request: a battle still queued when the visitor asked again (or picked another
        # arena) knows it is stale, whenever the queue gets to it.
        # The battle's prompt box stays, empty, while the next one is made: it kept
        # appearing and vanishing, and everything under it jumped at each battle.
        return visit.battle_number(state), gr.update(value="", visible=True), *page.begin()

    def page_idle(state, arena_id):
        if state is not None and visit.shown_arena(state) == arena_id:
            # A battle asked for after the pick was served first and recorded this arena:
            # leaving now would make that battle stale, and the page waited for it forever
            # (a clean-clone CI run caught it: pick an arena, then New battle at once).
            return [gr.skip()] * (1 + len(page.battle_outputs))
        visit.leave(state, time.monotonic(), shown=arena_id)
        return page.idle()

    def stale():
        """page_start's answer for a battle the visitor left before it was shown: no change
        (fresh each time: Gradio may edit an update it is handed)."""
        return (gr.skip(),) * (2 + len(page.battle_outputs))

    async def page_start(state, ticket, arena_id, prompt, language, request: gr.Request):
        asked = visit.battle_number(state)
        if ticket != asked:  # asked for again, or another arena picked, while it was queued
            return stale()
        try:
            view, values = await battles.open(arena_id, prompt, language, request, page=True)
        except Exception as exc:
            # A refusal says why; anything else (a bug, a full disk) was shown by Gradio as
            # a bare "Error" over every player, under a gate still "Making both outputs…":
            # the visitor reads that it failed and that New battle tries again.
            if not isinstance(exc, gr.Error):
                log.exception("a battle failed on the server")
            if visit.battle_number(state) != asked:  # a newer battle was asked for meanwhile
                return stale()
            message = exc.message if isinstance(exc, gr.Error) else ui_text.BATTLE_FAILED
            gr.Warning(message, duration=WARNING_SECONDS)
            return state, gr.update(value="", visible=False), *page.refused(message)
        if visit.battle_number(state) != asked:  # left before it arrived: the newer one is shown
            return stale()
        visit.claim(state, view.handle, view.arena, view.modality)
        shown = gr.update(value=view.prompt, visible=True)
        return state, shown, *page.opened(view.modality, values, asked)

    async def page_vote(state, choice, report, request: gr.Request,
                        profile: gr.OAuthProfile | None):  # fmt: skip
        number = visit.reported_battle(report)
        handle, on_screen = visit.voted_battle(state, number, time.monotonic())
        unchanged = [gr.skip()] * len(page.vote_outputs)
        try:
            reveal = await battles.reveal_of(handle, choice, request, profile, report)
        except (ArenaError, IdentityError) as exc:
            refusal(exc)
            reason = getattr(exc, "reason", None)  # IdentityError has none
            shown = bool(handle and on_screen and state.get("handle") == handle)
            # The battle on screen took a vote whose answer never reached this page (a
            # dropped connection, an error after the row was written): show what was recorded.
            reveal = getattr(exc, "reveal", None) if shown and not state.get("voted") else None
            if reveal is None and (not shown or reason == ALREADY_VOTED):
                # Not about the battle on screen, or this page's other vote on it won: the
                # page already says (or is about to say) what happened.
                return gr.skip(), *unchanged
            if reveal is None and reason == LISTENING:  # held: sent once the count ends
                return state, *page.vote_refused(wait=exc.wait, number=number, choice=choice)
            if reveal is None:
                gr.Warning(str(exc), duration=WARNING_SECONDS)
                return state, *page.vote_refused(str(exc))
        except Exception:
            # Not a refusal (a bug, a full disk): Gradio showed a bare "Error" over the
            # players, which vanished, and nothing said whether the vote was taken.
            log.exception("a vote failed on the server")
            gr.Warning(ui_text.VOTE_FAILED, duration=WARNING_SECONDS)
            if not (handle and on_screen and state.get("handle") == handle):
                return gr.skip(), *unchanged
            return state, *page.vote_refused(ui_text.VOTE_FAILED)
        # Counted once, however often its answer comes back (a press sent again after the
        # answer was lost gets the vote recorded): shown again, the same reveal is harmless.
        first = visit.counted(state, handle)
        # The board of the reveal, read only if there is one to show.
        board = await battles.board(state["arena"]) if state.get("handle") == handle else None
        if state.get("handle") != handle and not first:  # its toast was shown already
            return gr.skip(), *unchanged
        if state.get("handle") != handle:  # moved on (before or meanwhile): a toast instead
            gr.Info(ui_text.vote_on_left_battle(state["votes"]), duration=WARNING_SECONDS)
            header = await battles.header(page, visit.shown_arena(state), state["votes"])
            return state, *unchanged[:-1], header
        state["voted"] = True
        return state, *page.revealed(reveal, board, state["votes"])

    triggers = [page.new.click, page.next.click, page.prompt_in.submit]  # Enter in the prompt
    ticket = gr.Number(0, visible=False, precision=0)
    # page_start runs for every request ("multiple"): under Gradio's default "once" the page
    # dropped a battle asked for while the last one was still being made, which then came
    # back stale, and the gate said "Making both outputs…" for good (N pressed twice on a
    # typed prompt; tests/test_first_command_hunt.py). A stale one returns at once.
    gr.on(triggers, page_begin, inputs=[session, page.prompt_in, page.arena_in],
          outputs=[ticket, page.prompt_shown, *page.begin_outputs],
          queue=False, api_visibility="private").then(None, js=assets.RESET).then(
        page_start, inputs=[session, ticket, page.arena_in, page.prompt_in, page.language_in],
        outputs=[session, page.prompt_shown, *page.battle_outputs], api_visibility="private",
        concurrency_limit=BATTLE_WORKERS, concurrency_id="battle",
        trigger_mode="multiple")  # fmt: skip
    # The page script's report of the seconds each clip played, filled in as a vote is sent.
    report = gr.Textbox(visible=False)
    for choice, button in zip(VOTES, page.buttons, strict=True):
        button.click(_bind(page_vote, choice), inputs=[session, report], js=assets.LISTENED,
                     outputs=[session, *page.vote_outputs], api_visibility="private",
                     concurrency_limit=VOTE_WORKERS, concurrency_id="vote")  # fmt: skip
    for side, audio in zip("AB", page.media[:2], strict=True):
        for kind, listener in (("play", audio.play), ("pause", audio.pause), ("stop", audio.stop)):
            listener(None, js=assets.player_hook(side, kind))
    page.play_both.click(None, js=assets.PLAY_BOTH)
    page.arena_in.change(page_idle, inputs=[session, page.arena_in],
                         outputs=[page.prompt_shown, *page.battle_outputs], queue=False,
                         api_visibility="private").then(None, js=assets.RESET)  # fmt: skip
    # always_last: "once" dropped an arena picked while the last header was on its way.
    gr.on([demo.load, page.arena_in.change], page.show_arena, inputs=[page.arena_in, session],
          outputs=[page.header_box, page.language_in], api_visibility="private", queue=False,
          trigger_mode="always_last")  # fmt: skip


def _bind(handler, choice):
    """``handler`` with its vote choice fixed: one handler for the four buttons."""

    async def bound(state, listened, request: gr.Request,
                    profile: gr.OAuthProfile | None = None):  # fmt: skip
        return await handler(state, choice, listened, request, profile)

    return bound


def main() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    forget_missing_matplotlib()
    try:
        settings = Settings.from_env()
        service = build_service(settings)
    except (ConfigError, RegistryError, BackendConfigError) as exc:
        # The operator's mistake, which the message names (variable, or file, arena, model
        # and field): one line, not a traceback through the loader with it at the end.
        log.error("cannot start: %s", exc)
        raise SystemExit(2) from None
    if service.sync is not None:
        service.sync.flush_on_sigterm()
    loading = service.start_loading()
    if service.warmup is not None:
        service.warmup.start()
    start_judges(service, settings)
    start_audio_publisher(service, settings)
    start_snapshots(service, settings)
    clips = clip_store(settings)
    demo = build_demo(service, settings, clips, loading)
    FolderBudget(
        demo.GRADIO_CACHE, settings.temp_mb * 1024 * 1024, records=lambda: demo.temp_file_sets
    ).start()
    demo.queue(default_concurrency_limit=8).launch(**launch_options(settings, clips))


def clip_store(settings: Settings) -> ClipStore:
    """The store of the battles' clips, in a folder of Gradio's cache that holds no files."""
    return ClipStore(Path(gr_utils.get_upload_folder()) / "arena-clips",
                     settings.clip_mb * 1024 * 1024)  # fmt: skip


def launch_options(settings: Settings, clips: ClipStore) -> dict:
    """``launch()`` arguments: the look, the page's script, the clips' route, and nothing
    open that the operator did not ask for."""
    peer_is_the_socket()
    return {
        "theme": assets.theme(),
        "css": assets.styles(),
        "head": assets.head(),
        "js": assets.script(),
        # The app takes no uploads: refuse every file with content.
        "max_file_size": 0,
        # /monitoring shows function names and success rates to anyone.
        "enable_monitoring": settings.monitoring,
        # Before Gradio's own routes, so it answers for the clips' paths (space/clips.py).
        "app_kwargs": {"routes": [clips.route()]},
    }


if __name__ == "__main__":
    main()
