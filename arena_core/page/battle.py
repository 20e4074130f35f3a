"""The Arena tab's pieces as HTML: header, arena offer, language choice, sides, gate, reveal.

Pure functions from the registry, model statuses and a vote's reveal to the
strings the page shows; the app only puts them into components. Before a vote
nothing here receives a model id or name (the side heads and the gate take a
side letter and a state), so the page cannot leak one by accident.

Every value that comes from the registry or a visitor is escaped: a model
name is data, never markup.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from arena_core.backends.pool import ModelStatus
from arena_core.leaderboard import Board
from arena_core.page.presenters import VOTE_WORDS, rank_text
from arena_core.registry import Arena, Model
from arena_core.registry.fields import http_url
from arena_core.space.service import ArenaError, Reveal, Side, clean_prompt

#: A battle needs two models that can run here.
PAIR = 2
#: Names of the language codes an arena's prompt categories may use (others show the code).
LANGUAGE_NAMES = {
    "en": "English", "de": "German (Deutsch)", "es": "Spanish (Español)",
    "fr": "French (Français)", "it": "Italian (Italiano)", "ja": "Japanese (日本語)",
    "pt": "Portuguese (Português)", "nl": "Dutch (Nederlands)", "pl": "Polish (Polski)",
    "zh": "Chinese (中文)", "ko": "Korean (한국어)", "ru": "Russian (Русский)",
}  # fmt: skip
#: Keyboard shortcuts of the vote buttons (the page's script binds the same keys).
VOTE_KEYS = {"a": "A", "b": "B", "tie": "T", "both_bad": "X"}
#: The vote buttons' words on the page (the API and the reveal say ``VOTE_WORDS``).
VOTE_LABELS = {"a": "← A is better", "b": "B is better →", "tie": "Tie", "both_bad": "Both are bad"}
#: A padlock drawn inline (an emoji needs a font the visitor may lack).
LOCK = ('<svg class="lock" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">'
        '<path fill="currentColor" d="M6 10V8a6 6 0 1 1 12 0v2h1a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H5'
        'a1 1 0 0 1-1-1V11a1 1 0 0 1 1-1h1zm2 0h8V8a4 4 0 1 0-8 0v2z"/></svg>')  # fmt: skip
#: What each side's listening state reads as (the script switches between them).
SIDE_STATES = {"idle": "not heard yet", "playing": "playing…", "heard": "heard ✓"}


# -- which arenas the page offers ---------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """The arenas a visitor can battle in here, and one friendly line for each other one."""

    offered: tuple[Arena, ...]
    absent: tuple[tuple[Arena, str], ...]


def offer(arenas: Sequence[Arena], statuses: Mapping[str, Mapping[str, ModelStatus]]) -> Offer:
    """Arenas with at least two models that can run here (paused ones count: a pause ends),
    and for the others why not, in words for a visitor (see :func:`why_not_here`)."""
    offered, absent = [], []
    for arena in arenas:
        models = list(statuses.get(arena.id, {}).values())
        if sum(s.available for s in models) >= PAIR:
            offered.append(arena)
        else:
            absent.append((arena, why_not_here(models)))
    return Offer(tuple(offered), tuple(absent))


def why_not_here(models: Sequence[ModelStatus]) -> str:
    """Why an arena cannot hold battles here, as one line that points to About."""
    reasons = " ".join(s.reason for s in models if not s.available)
    if sum(s.available for s in models) == 1:
        return "Only one of its models can run here: see About."
    if "HF_HUB_OFFLINE" in reasons:
        return "Its models are hosted, and this server runs offline: see About."
    if "HF_TOKEN" in reasons or "token" in reasons.lower():
        return "Needs a Hugging Face token: see About."
    if "not installed" in reasons or "not on PATH" in reasons:
        return "Its engines are not installed on this server: see About."
    return "Its models cannot run on this server right now: see About."


def absent_note(absent: Sequence[tuple[Arena, str]]) -> str:
    """Markdown under the arena picker: one line per arena that is not offered."""
    return "\n\n".join(f"**{escape(a.title)}** is not offered here. {why}" for a, why in absent)


# -- header and languages -------------------------------------------------------------------


def pitch(arena: Arena) -> str:
    """The arena's one-line pitch: the first clause of its description (or its title)."""
    text = " ".join((arena.description or "").split())
    first = re.split(r"(?<=[.!?])\s|:\s", text, maxsplit=1)[0].rstrip(".")
    first = re.sub(r"\s*\([^)]*\)", "", first).strip()
    return first or arena.title


def header_html(arena: Arena, models_here: int, votes: int | None, session_votes: int) -> str:
    """The arena's line under the page title: pitch, models, votes, and yours this session."""
    count = "votes loading…" if votes is None else f"{votes:,} vote{'' if votes == 1 else 's'}"
    yours = "" if not session_votes else (
        f'<span class="you">you: <b>{session_votes}</b> this session</span>'
    )  # fmt: skip
    return (
        f'<div class="arena-line" data-you="{session_votes}"><span class="arena-title">{escape(arena.title)}</span>'
        f'<span class="pitch">{escape(pitch(arena))}</span>'
        f'<span class="stats"><span>{models_here} models</span><span>{count}</span>{yours}'
        "</span></div>"
    )


def language_choices(languages: Sequence[str]) -> list[tuple[str, str]]:
    """(label, code) pairs for the language dropdown."""
    return [(LANGUAGE_NAMES.get(code, code), code) for code in languages]


def category_choices(categories: Sequence[str], languages: Sequence[str]) -> list[tuple[str, str]]:
    """(label, code) pairs for the board's category filter: languages by name, topics in
    words ("tongue_twisters" reads "Tongue twisters")."""
    return [(LANGUAGE_NAMES.get(c, c) if c in languages else c.replace("_", " ").capitalize(), c)
            for c in categories]  # fmt: skip


def pick_language(accept_language: str | None, languages: Sequence[str]) -> str | None:
    """The visitor's preferred language among ``languages`` (from the browser's
    ``Accept-Language``, by its q-values), else the arena's first; None if it has none."""
    if not languages:
        return None
    ranked = []
    for k, part in enumerate((accept_language or "").split(",")):
        tag, _, q = part.strip().partition(";q=")
        try:
            weight = float(q) if q else 1.0
        except ValueError:
            continue
        ranked.append((-weight, k, tag.split("-")[0].lower()))
    for _, _, code in sorted(ranked):
        if code in languages:
            return code
    return languages[0]


def prompt_refusal(prompt: str | None, max_chars: int) -> str | None:
    """Why the service would refuse the typed ``prompt`` (too long, nothing a model can
    read), or None: checked before a battle is asked for, so the one on screen is kept.
    An empty prompt draws a sentence of the arena's set and is never refused."""
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    try:
        clean_prompt(prompt, max_chars)
    except ArenaError as exc:
        return str(exc)
    return None


# -- a battle's sides and the gate ------------------------------------------------------------


def side_head(side: str, state: str = "idle") -> str:
    """A side's head before the vote: its letter and its listening state (no model, ever)."""
    label = SIDE_STATES.get(state, "")
    chip = f'<span class="side-state" data-state="{state}">{label}</span>' if label else ""
    return (
        f'<div class="side-head" data-side="{side}"><span class="side-letter">{side}</span>'
        f"{chip}</div>"
    )


def gate_html(
    stage: str, modality: str | None = None, wait: float | None = None, battle: int | None = None,
    pending: str | None = None,
) -> str:  # fmt: skip
    """The line over the vote buttons, saying what unlocks them.

    ``stage``: ``idle`` (no battle yet), ``working`` (outputs being made), ``open``
    (a battle waits for its vote) or ``voted``. An open audio battle is locked until
    both clips were heard; the page's script keeps the line and the buttons in step
    with the players (``data-modality`` tells it to). ``wait``: seconds the server's
    listening gate still holds votes back (it refused one); the script keeps the buttons
    locked and counts them down (``data-wait``). ``battle``: the open battle's number in
    the session, which the page sends with a vote (``data-battle``, see ``page/visit.py``).
    ``pending``: the vote held back by that wait (``data-pending``), which the script sends
    once the count ends, for this gate's battle only (a new battle replaces the gate).
    """
    keys = " · ".join(f"<kbd>{k}</kbd> {VOTE_WORDS[v]}" for v, k in VOTE_KEYS.items())
    if modality != "audio":
        opened = f"Compare both, then vote{_key_hint(': ' + keys)}."
    elif wait is not None:  # the server's listening gate holds votes back
        opened = _held_line(wait, pending)
    else:
        opened = (f"{LOCK} Voting opens once you have heard <b>both clips</b> to the end. "
                  f"Press <b>Play A then B</b>{_key_hint(' (or <kbd>P</kbd>)')}.")  # fmt: skip
    lines = {
        "idle": f"Press <b>New battle</b>{_key_hint(' (or <kbd>N</kbd>)')} to hear two "
        "anonymous models.",
        "working": "Making both outputs…",
        "open": opened,
        "voted": f"Vote saved. Press <b>Next battle</b>{_key_hint(' (or <kbd>N</kbd>)')} "
        "for another one.",
    }
    held = f' data-wait="{wait:.3f}"' if wait is not None else ""  # each refusal its own
    if battle is not None:
        held += f' data-battle="{int(battle)}"'
    if pending in VOTE_KEYS:
        held += f' data-pending="{pending}"'
    return (
        f'<div class="gate" role="status" aria-live="polite" data-stage="{stage}" '
        f'data-modality="{modality or ""}"{held}><span class="gate-text">{lines[stage]}</span>'
        f'<span class="gate-keys"><span class="keys-on">Keys: {keys} · <kbd>N</kbd> new battle'
        f"</span>{KEYS_OFF}</span></div>"
    )


def _held_line(wait: float, pending: str | None) -> str:
    """The gate's words while the server's listening gate holds votes back, as the page
    script writes them (its countdown's seconds hidden from screen readers, told the wait
    once): the same words to a screen reader, so the gate, a live region, is read once. (It
    said "Voting opens once you have heard both clips" until the script's next render, to
    a visitor who had.)"""
    seconds = math.ceil(float(f"{wait:.3f}"))  # as the script reads data-wait
    count = (f'<b aria-hidden="true">{seconds} s</b><span class="sr-only">about {seconds} s'
             "</span>: the server waits as long as the clips take to play.")  # fmt: skip
    if pending in VOTE_LABELS:
        return f"{LOCK} Both clips heard. Your vote <b>{VOTE_LABELS[pending]}</b> will be sent in {count}"
    return f"{LOCK} Both clips heard. Voting opens in {count}"


#: The gate's words while the visitor has turned the single-key shortcuts off (the styles
#: show them instead of the keys, by the page script's class on <html>).
KEYS_OFF = ('<span class="keys-off">Keyboard shortcuts are off: turn them on with the '
            "<b>Keyboard shortcuts</b> switch under the vote buttons.</span>")  # fmt: skip


def keys_switch_html() -> str:
    """The switch that turns the single-key shortcuts (A, B, T, X, N, P) on and off.

    WCAG 2.1.4 (Level A): a shortcut of one printable key must be possible to turn off, or
    a speech-input user's dictated word, or a stray key, votes or starts a battle. On by
    default; the page script keeps the choice in the browser (localStorage) and sets the
    box from it, so the server never renders it otherwise.
    """
    return ('<div class="keys-line"><label class="keys-switch"><input type="checkbox" '
            'role="switch" id="keys-switch" checked> Keyboard shortcuts</label></div>')  # fmt: skip


def _key_hint(html: str) -> str:
    """Words about keyboard keys, which the styles hide on touch and phone screens."""
    return f'<span class="key-hint">{html}</span>'


# -- after the vote ---------------------------------------------------------------------------


def reveal_head(
    letter: str, side: Side, model: Model | None, vote: str, board: Board | None
) -> str:
    """A side's head after the vote: the model's name (linked to its page), whether the
    visitor picked it, how its rating moved and where it now ranks."""
    picked = {"a": "A", "b": "B"}.get(vote)
    if vote == "tie":
        mark, badge = "tie", "Tie"
    elif vote == "both_bad":
        mark, badge = "bad", "Both bad"
    else:
        mark, badge = ("picked", "Your pick") if picked == letter else ("other", "")
    name = escape(side.name)
    if model is not None and model.url and http_url(model.url):  # the loader checks it too
        name = (f'<a href="{escape(model.url, quote=True)}" target="_blank" rel="noopener" '
                f'title="The model\'s page or source">{name} ↗</a>')  # fmt: skip
    moves = []
    if side.before is not None and side.after is not None:
        delta = side.after - side.before
        trend = "up" if delta > 0 else "down" if delta < 0 else "flat"
        moves.append(f'Elo {side.before:.0f} → {side.after:.0f} '
                     f'<span class="delta {trend}">{delta:+.0f}</span>')  # fmt: skip
    moves.append(_rank_words(board, side.model_id))
    chip = f'<span class="badge {mark}">{badge}</span>' if badge else ""
    # data-name: the name alone, for the page script's announcement of the reveal.
    return (
        f'<div class="side-head revealed {mark}" data-side="{letter}" '
        f'data-name="{escape(side.name, quote=True)}">'
        f'<span class="side-letter">{letter}</span><div class="who"><span class="name">{name}'
        f'</span>{chip}<div class="moves">{" · ".join(m for m in moves if m)}</div></div></div>'
    )


def _rank_words(board: Board | None, model_id: str) -> str:
    if board is None:
        return ""
    ranked = sum(1 for r in board.rows if r.battles)
    for row in board.rows:
        if row.model_id == model_id:
            text = rank_text(row, board.components > 1)
            return text if not row.battles or row.rank is None else f"now #{text} of {ranked}"
    return ""


def vote_status(reveal: Reveal, session_votes: int) -> str:
    """The line under the buttons after a vote: what was chosen, thanks, and any note."""
    line = f"You voted **{VOTE_WORDS[reveal.vote]}**."
    if reveal.counted:
        line += f" That makes {session_votes} this session: thank you!"
    return line + (f" {reveal.note}" if reveal.note else "")
