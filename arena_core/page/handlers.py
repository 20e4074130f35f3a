"""The Space's handlers of battles and votes, shared by its API and its page.

``app.py`` lays the page out and wires events to these; the rules they apply live in
:class:`~arena_core.space.service.ArenaService`. What is here is what only a web request
has: its site (``identity.same_site``), the voter's identity read from it, Gradio's
refusals, and the executors that keep battles from taking the threads votes need.
"""

import asyncio
import functools
import logging
from concurrent.futures import ThreadPoolExecutor

import gradio as gr

from arena_core.integrity.identity import (
    IdentityError,
    same_site,
    session_hash,
    voter_hash,
    voter_identity,
)
from arena_core.page import media, presenters, ui_text, visit
from arena_core.space.clips import ClipStore
from arena_core.space.config import Settings
from arena_core.space.service import ArenaError, ArenaService, BattleView, Reveal

#: Threads that open battles (each waits for its two generations, bounded by the pools).
BATTLE_WORKERS = 32
#: Threads that record votes: their own, so battles that generate or wait for their hold
#: never delay a vote (concurrent votes share an fsync, see ``VoteLog``).
VOTE_WORKERS = 8

log = logging.getLogger("app")


def refusal(exc: ArenaError | IdentityError) -> gr.Error:
    """A refusal the visitor reads ("you already voted"): one log line, no traceback."""
    log.info("refused: %s", exc)
    return gr.Error(str(exc), print_exception=False)


class Battles:
    """The handlers of battles and votes, shared by the API and the page.

    The API endpoints /new_battle and /vote run outside Gradio's queue (queue=False): the
    queue's bookkeeping doubles a request's server time, which capped the arena well below
    100 votes a second on two cores. The page's own clicks go through the queue (people
    click slowly) and call the same handlers, then lay out the result. Both are async and
    run the work on executors of their own, so a flood of typed prompts cannot take the
    threads votes need, and the typed-prompt hold is awaited, not slept.
    """

    def __init__(self, service: ArenaService, settings: Settings, clips: ClipStore, cache: str):
        self.service, self.settings, self.clips, self.cache = service, settings, clips, cache
        self.battle_workers = ThreadPoolExecutor(BATTLE_WORKERS, thread_name_prefix="battle")
        self.vote_workers = ThreadPoolExecutor(VOTE_WORKERS, thread_name_prefix="vote")

    async def start(self, state, arena_id, prompt, language="", request: gr.Request = None):
        """Open a battle and make it the session's (the API's /new_battle)."""
        view, values = await self.open(arena_id, prompt, language, request)
        return visit.claim(state, view.handle, view.arena, view.modality), view.prompt, *values

    async def open(self, arena_id, prompt, language="", request: gr.Request = None, *,
                   page: bool = False) -> tuple[BattleView, list]:  # fmt: skip
        """A new battle and its outputs as the page's media values, once its hold is over;
        refused for a page of another site (``identity.same_site``). ``page``: the language
        came from the page's box (:meth:`page_language`)."""
        try:
            same_site(self.settings.identity, request.headers if request else None)
        except IdentityError as exc:
            raise refusal(exc) from None
        try:
            view, values = await asyncio.get_running_loop().run_in_executor(
                self.battle_workers, self._open, arena_id, prompt, language, page
            )
        except ArenaError as exc:
            raise refusal(exc) from None
        if view.hold > 0:
            await asyncio.sleep(view.hold)
        return view, values

    def page_language(self, arena_id: str, language: str | None) -> str | None:
        """The page's language box, checked for a battle of ``arena_id``. It may hold the
        language of the arena just left (the switch's answer still on its way): no use to
        an arena without languages, so dropped; an arena with languages refuses one it has
        not (stale, or typed into the box) and asks for one from the list."""
        languages = self.service.languages(arena_id)
        if not language or language in languages:
            return language or None
        if not languages:
            return None
        raise ArenaError(ui_text.LANGUAGE_UNKNOWN)

    def _open(self, arena_id, prompt, language, page=False) -> tuple[BattleView, list]:
        # The page's language is checked here, on a battle worker like the battle itself,
        # after the same-site check, and refused as the service's refusals are.
        language = self.page_language(arena_id, language) if page else language
        view = self.service.new_battle(arena_id, prompt or None, language or None)
        return view, media.values(view, self.clips, self.cache)

    async def reveal_of(self, handle, choice, request: gr.Request, profile,
                        listened: str | None = None) -> Reveal:  # fmt: skip
        """The vote on battle ``handle``, recorded; its refusal raised as the service's
        ArenaError (or IdentityError), whose ``reason`` and ``wait`` the page reads."""
        # The signed-in Hugging Face user (OAuth, on a Space) or Gradio's own login; else the
        # address the trusted proxies saw. Only the salted hash leaves this function, and
        # so for the session Gradio issued (one per page load, one per API client).
        username = profile.username if profile is not None else request.username
        voter = voter_hash(self.settings.voter_salt, voter_identity(
            self.settings.identity, username=username, headers=request.headers,
            client_host=request.client.host if request.client else None))  # fmt: skip
        session = session_hash(self.settings.voter_salt, request.session_hash)
        vote = functools.partial(self.service.vote, handle, choice, voter, session=session,
                                 listened=listened)  # fmt: skip
        return await asyncio.get_running_loop().run_in_executor(self.vote_workers, vote)

    async def cast(self, state, choice, request: gr.Request,
                   profile: gr.OAuthProfile | None = None):  # fmt: skip
        try:
            reveal = await self.reveal_of((state or {}).get("handle"), choice, request, profile)
        except (ArenaError, IdentityError) as exc:
            raise refusal(exc) from None
        state = {**(state or {}), "voted": True}
        visit.counted(state, state.get("handle"))  # once, however often the vote is answered
        return state, presenters.reveal_markdown(reveal), presenters.reveal_data(reveal)

    async def board(self, arena_id: str):
        return await asyncio.get_running_loop().run_in_executor(
            self.vote_workers, self.service.board, arena_id
        )

    async def header(self, page, arena_id, session_votes: int):
        """The header of the arena the page shows now (``gr.skip()`` for none known)."""
        if not arena_id:
            return gr.skip()
        try:
            board = await self.board(arena_id)
        except ArenaError:
            return gr.skip()
        return page.header(arena_id, session_votes, board.votes_used)
