"""The Arena tab: its layout and the updates each step of a battle gives its components.

``app.py`` wires the events (which handler runs on which click, with which queue);
what the components are and what each step shows lives here, beside the Leaderboard
tab (:mod:`arena_core.page.board_tab`).
"""

from __future__ import annotations

import time
from html import escape

import gradio as gr

from arena_core.page import battle, ui_text
from arena_core.page.battle import VOTE_LABELS, Offer
from arena_core.page.clip import clip_player
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService, Reveal
from arena_core.votes.schema import VOTES

#: Percent of a clip the players' skip buttons jump (Gradio's is 5%, a third of a second on
#: a sentence): a fifth, about a second, enough to hear a word again.
SKIP_SHARE = 20


def arena_layout(service: ArenaService, settings: Settings, offer: Offer) -> ArenaPage:
    """The Arena tab's components, laid out; ``app.py`` wires their events."""
    offered = offer.offered
    page = ArenaPage(service)
    page.header_box = gr.HTML(elem_id="arena-header")
    with gr.Row(equal_height=True, elem_id="battle-inputs", elem_classes="stack-on-phone"):
        page.arena_in = gr.Dropdown([(a.title, a.id) for a in offered],
                                    value=offered[0].id if offered else None, label="Arena",
                                    scale=2, min_width=260, elem_id="arena-in")  # fmt: skip
        # Any value is let through to the handler (``Battles.page_language`` checks it): the
        # box of the arena just left is still sent while the switch's answer is on its way,
        # and Gradio, checking it against the new arena's choices, refused the battle before
        # the page could say anything (the gate stayed "Making both outputs…").
        page.language_in = gr.Dropdown(label="Language of your prompt", visible=False, scale=2,
                                       info=ui_text.LANGUAGE_INFO, elem_id="language-in",
                                       allow_custom_value=True)  # fmt: skip
        page.prompt_in = gr.Textbox(label="Prompt", placeholder=ui_text.PROMPT_HINT, scale=5,
                                    info=ui_text.PROMPT_INFO, elem_id="prompt-in",
                                    max_length=settings.max_prompt_chars * 2,
                                    # the page script's character counter reads the limit here
                                    elem_classes=f"prompt-limit-{settings.max_prompt_chars}")  # fmt: skip
    gr.Markdown(battle.absent_note(offer.absent), elem_classes="absent-note",
                visible=bool(offer.absent))  # fmt: skip
    page.new = gr.Button("New battle", variant="primary", size="lg", elem_id="new-battle",
                         interactive=bool(offered))  # fmt: skip
    page.prompt_shown = gr.Textbox(label="Prompt of this battle", interactive=False,
                                   elem_id="prompt-shown", visible=False)  # fmt: skip
    outputs = {}
    with gr.Row(equal_height=False):
        for side in "AB":
            with gr.Column(elem_id=f"col-{side}", elem_classes="side"):
                page.heads[side] = gr.HTML(battle.side_head(side, ""), elem_id=f"side-{side}")
                outputs[side] = (
                    clip_player(label=f"Clip {side}", interactive=False,
                                elem_id=f"audio-{side}", buttons=[],
                                waveform_options=gr.WaveformOptions(skip_length=SKIP_SHARE)),
                    gr.Textbox(label=f"Output {side}", lines=10, interactive=False, visible=False),
                    gr.Image(label=f"Image {side}", interactive=False, visible=False),
                )  # fmt: skip
    page.play_both = gr.Button("▶ Play A then B", visible=False, elem_id="play-both")
    page.gate = gr.HTML(battle.gate_html("idle"), elem_id="gate")
    with gr.Row(elem_id="votes"):
        page.buttons = [gr.Button(VOTE_LABELS[v], interactive=False, elem_id=f"vote-{v}",
                                  elem_classes="vote-btn") for v in VOTES]  # fmt: skip
    # Drawn once and never updated: the page script owns its state (the visitor's choice).
    gr.HTML(battle.keys_switch_html(), elem_id="keys-line")
    page.status = gr.Markdown(elem_id="status")
    page.next = gr.Button("Next battle", variant="primary", size="lg", visible=False,
                          elem_id="next-battle")  # fmt: skip
    page.media = [outputs[s][k] for k in range(3) for s in "AB"]  # audio, text, image pairs
    return page


class ArenaPage:
    """The Arena tab's components and the updates each step of a battle gives them."""

    def __init__(self, service: ArenaService):
        self.service = service
        self.heads: dict[str, gr.HTML] = {}
        self.buttons: list[gr.Button] = []
        self.media: list = []

    @property
    def _common_outputs(self) -> list:
        return [self.gate, self.status, *self.buttons, self.new, self.next, self.play_both,
                self.heads["A"], self.heads["B"]]  # fmt: skip

    @property
    def begin_outputs(self) -> list:
        return [*self._common_outputs, *self.media[:2]]

    @property
    def battle_outputs(self) -> list:
        return [*self._common_outputs, *self.media]

    @property
    def vote_outputs(self) -> list:
        return [self.status, self.gate, *self.buttons, self.new, self.next, self.heads["A"],
                self.heads["B"], *self.media[:2], self.header_box]  # fmt: skip

    def show_arena(self, arena_id, state, request: gr.Request):
        """The header and the language choice of the arena picked (browser's language first)."""
        if not arena_id:
            return "", gr.update(visible=False)
        languages = self.service.languages(arena_id)
        chosen = battle.pick_language(request.headers.get("accept-language"), languages)
        # The board can take a while on a busy server (a refit), and a vote on the battle
        # just left, counted meanwhile, sends its own header first: this one must not
        # overwrite it with older counts, so both are read again if a vote came in.
        state = state or {}
        for _ in range(2):
            mine = state.get("votes", 0)
            votes = self.service.board(arena_id).votes_used if self.service.progress.done else None
            if state.get("votes", 0) == mine:
                break
        return self.header(arena_id, state.get("votes", 0), votes), gr.update(
            choices=battle.language_choices(languages), value=chosen, visible=bool(languages)
        )

    def header(self, arena_id: str, session_votes: int, votes: int | None = None) -> str:
        arena = self.service.arena(arena_id)
        here = sum(s.available for s in self.service.pools[arena_id].status().values())
        if votes is None and self.service.progress.done:
            votes = self.service.board(arena_id).votes_used
        return battle.header_html(arena, here, votes, session_votes)

    def _common(self, stage, modality, status, heads, *, voting=False, play=False, number=None):
        locked = gr.update(interactive=voting, variant="secondary")
        return (battle.gate_html(stage, modality, battle=number), status,
                *[locked] * len(self.buttons),
                gr.update(visible=True), gr.update(visible=False), gr.update(visible=play),
                *heads)  # fmt: skip

    def begin(self):
        """Instantly, when a battle is asked for: everything of the last one cleared."""
        heads = [battle.side_head(s, "") for s in "AB"]
        cleared = [gr.update(value=None, label=f"Clip {s}") for s in "AB"]
        return *self._common("working", None, ui_text.WORKING, heads), *cleared

    def idle(self):
        """Another arena picked: the last battle leaves the screen (its vote is not asked)."""
        heads = [battle.side_head(s, "") for s in "AB"]
        cleared = [gr.update(value=None, visible=True, label=f"Clip {s}") for s in "AB"]
        cleared += [gr.update(value=None, visible=False)] * 4
        return gr.update(value="", visible=False), *self._common("idle", None, "", heads), *cleared

    def prompt_refused(self, message: str):
        """A typed prompt refused before a battle was asked for: the reason under the
        buttons, and the battle on screen kept as it is (its clips, what was heard).

        The page script also shows the reason under the prompt box, in its live line (by
        the class): under the buttons alone it was below a laptop's fold and said to no
        screen reader, and the toast never shows (the event skips the queue)."""
        # Each refusal its own element (data-at), also when its words are the last one's.
        line = (f'<span class="prompt-refusal" data-at="{time.monotonic_ns()}">⚠️ '
                f"{escape(message)}</span>")  # fmt: skip
        return gr.skip(), line, *[gr.skip()] * (len(self.begin_outputs) - 2)

    def refused(self, message: str):
        heads = [battle.side_head(s, "") for s in "AB"]
        return *self._common("idle", None, f"⚠️ {message}", heads), *[gr.update()] * 6

    #: Keyword arguments of each media output's update for a battle that opens: the players'
    #: anonymous labels, and their position at 0. Gradio keeps a player's position bound
    #: across values and seeked each new clip to where the last one stopped (its end, for a
    #: shorter clip); another seek before that one ended now and then left Chromium's player
    #: seeking for good: clip B never played. (Not when a clip is cleared: that would seek
    #: the old clip as it leaves.)
    _labels = tuple({"label": f"Clip {s}", "playback_position": 0} for s in "AB") + ({},) * 4

    def vote_refused(self, message: str = "", *, wait: float | None = None,
                     number: int | None = None, choice: str | None = None):  # fmt: skip
        """A vote the server refused, for the battle on screen (``number``): the reason under
        the buttons. Held back by the listening gate (``wait`` seconds), the vote ``choice``
        is kept instead: the gate closes again, counts the seconds down and names the vote,
        the line under the buttons says it is not recorded yet, and the page script sends it
        when the count ends (``gate_html``'s ``pending``)."""
        if wait is not None:
            gate = battle.gate_html("open", "audio", wait=wait, battle=number, pending=choice)
            return ui_text.HELD_VOTE, gate, *[gr.skip()] * (len(self.vote_outputs) - 2)
        status = f"⚠️ {message}" if message else ""
        return status, gr.skip(), *[gr.skip()] * (len(self.vote_outputs) - 2)

    def opened(self, modality: str, values: list, number: int):
        audio = modality == "audio"
        heads = [battle.side_head(s, "idle" if audio else "") for s in "AB"]
        # The players' labels too: a battle never opens under the last one's model names.
        shown = [gr.update(value=v, visible=kind == modality, **label)
                 for kind, v, label in zip(("audio", "audio", "text", "text", "image", "image"),
                                           values, self._labels, strict=True)]  # fmt: skip
        hint = ui_text.LISTEN_HINT if audio else ui_text.READ_HINT
        return *self._common(
            "open", modality, hint, heads, voting=True, play=audio, number=number
        ), *shown

    def revealed(self, reveal: Reveal, board, session_votes: int):
        """After the vote: names on both sides, the choice highlighted, one Next battle."""
        arena = self.service.arena(board.arena)
        models = {m.id: m for m in arena.models}
        heads = [battle.reveal_head(letter, side, models.get(side.model_id), reveal.vote, board)
                 for letter, side in (("A", reveal.a), ("B", reveal.b))]  # fmt: skip
        chosen = [gr.update(interactive=False, variant="primary" if v == reveal.vote else "secondary")
                  for v in VOTES]  # fmt: skip
        labels = [gr.update(label=f"{letter} · {side.name}")
                  for letter, side in (("A", reveal.a), ("B", reveal.b))]  # fmt: skip
        return (battle.vote_status(reveal, session_votes), battle.gate_html("voted"), *chosen,
                gr.update(visible=False), gr.update(visible=True), *heads, *labels,
                self.header(board.arena, session_votes, board.votes_used))  # fmt: skip
