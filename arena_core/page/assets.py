"""The page's own script, styles and theme, handed to ``launch()`` (Gradio 6 takes them there).

The page script is one function Gradio runs at page load: the players' states, one clip
at a time, "Play A then B", the vote buttons' lock and the keyboard shortcuts. Its body is
kept in parts by concern (``assets/arena/``, :data:`SCRIPT_PARTS`), joined here.
``arena.css`` styles the header, the two sides, the gate, the board and focus;
``frame.css`` the frame around them (page width, phone margins).
Read when the app launches, never at import.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

#: Where the files live, next to this module.
FOLDER = Path(__file__).resolve().parent / "assets"


#: The page script's parts, in order: one function's body, cut where its concerns part (a
#: single file of 650 lines was hard to find one's way in). Joined, they share one scope, so
#: a part may use what another declares; only statements that run at load (the listeners
#: and ``showKeys()`` at the end) need what comes before them.
SCRIPT_PARTS = ("state.js", "clips.js", "gate.js", "events.js")


def script() -> str:
    """The page-load function (a JavaScript arrow function, as ``launch(js=...)`` wants)."""
    parts = [(FOLDER / "arena" / part).read_text(encoding="utf-8") for part in SCRIPT_PARTS]
    return "() => {\n" + "\n".join(parts) + "}\n"


def styles() -> str:
    """The page's styles; Gradio scopes them to the app's content (``launch(css=...)``)."""
    return (FOLDER / "arena.css").read_text(encoding="utf-8")


def head() -> str:
    """Styles of the frame around the app, which scoped CSS cannot reach (``launch(head=...)``)."""
    return f"<style>{(FOLDER / 'frame.css').read_text(encoding='utf-8')}</style>"


#: The Soft theme's settings changed so that every text reaches 4.5:1 (see :func:`theme`):
#: indigo 600 under white text, indigo 800 labels, slate 600 softer text, and dark mode's
#: links in indigo 300 and 200.
READABLE = {
    **dict.fromkeys(["button_primary_background_fill", "button_primary_background_fill_dark",
                     "button_secondary_background_fill_hover_dark",
                     "checkbox_label_background_fill_selected"], "*primary_600"),
    **dict.fromkeys(["button_primary_background_fill_hover",
                     "button_primary_background_fill_hover_dark"], "*primary_700"),
    **dict.fromkeys(["block_label_text_color", "block_title_text_color"], "*primary_800"),
    "body_text_color_subdued": "*neutral_600",
    **dict.fromkeys(["link_text_color_dark", "link_text_color_visited_dark"], "*primary_300"),
    **dict.fromkeys(["link_text_color_hover_dark", "link_text_color_active_dark"], "*primary_200"),
}  # fmt: skip


def theme() -> gr.themes.Base:
    """Gradio's Soft theme with every text at a contrast of at least 4.5:1 (WCAG AA) in both
    schemes: it draws white on indigo 500 (4.47:1: the vote buttons, a chosen option), labels
    in indigo 500 on indigo 100 (3.6:1), softer text in slate 400 on white (2.6:1: the
    controls' notes, the footer) and dark mode's links in slate 500 (4.0:1). The selected
    tab and code are in ``arena.css``."""
    font = [gr.themes.LocalFont("IBM Plex Sans"), "ui-sans-serif", "system-ui", "sans-serif"]
    soft = gr.themes.Soft(primary_hue="indigo", secondary_hue="slate", neutral_hue="slate",
                          font=font)  # fmt: skip
    return soft.set(**READABLE)


def player_hook(side: str, kind: str) -> str:
    """The ``js=`` of a player's play/pause/stop event: tell the page script."""
    return f'() => {{ window.arena && window.arena.event("{side}", "{kind}"); }}'


#: ``js=`` hooks of the page's own buttons and of a new battle.
PLAY_BOTH = "() => { window.arena && window.arena.playBoth(); }"
RESET = "() => { window.arena && window.arena.reset(); }"
#: ``js=`` of a vote button: its inputs (the session's state, then the listening report)
#: with the report filled in by the page script. The state goes back as it came: the
#: server keeps a ``gr.State`` itself and never reads it from the browser.
LISTENED = "(state, report) => [state, window.arena ? window.arena.listened() : null]"
#: ``js=`` of every event that draws the Leaderboard tab: its inputs, the last (the request's
#: number) replaced by the next of a count the page keeps, so the server can tell which of two
#: overlapping requests the visitor made last, whatever order they reach it in (board_tab).
BOARD_ASK = (
    "(...values) => [...values.slice(0, -1), "
    "window.arenaBoardAsks = (window.arenaBoardAsks || 0) + 1]"
)
