"""What the arena service hands out (battles before the vote, reveals after it, the start-up
replay's progress) and how it cleans a typed prompt: plain data and pure functions, so the
page and the API read them without the service's machinery."""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from arena_core.backends import Output

#: Words for each vote, as the visitor chose it (the page's and the refusals').
VOTE_WORDS = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both are bad"}
#: Characters allowed from Unicode's "format" class: joiners some scripts need.
_KEPT_FORMAT = {"\u200c", "\u200d"}


class ArenaError(ValueError):
    """A request the arena refuses; the message is written for the visitor.

    ``reason`` names the refusals a page treats apart from the others (see
    :data:`~arena_core.space.battles.ALREADY_VOTED` and ``LISTENING``), and ``wait`` is the
    seconds after which the same request would pass (the listening gate's): a page keeps
    itself consistent with them without reading the message.
    """

    def __init__(self, message: str, *, reason: str | None = None, wait: float | None = None,
                 reveal: Reveal | None = None):  # fmt: skip
        super().__init__(message)
        self.reason, self.wait = reason, wait
        #: With ``ALREADY_VOTED``: the reveal of the vote the battle took (None: not known yet).
        self.reveal = reveal


@dataclass(frozen=True)
class BattleView:
    """What the visitor may see of a battle before voting."""

    handle: str
    arena: str
    modality: str
    prompt: str
    category: str | None
    output_a: Output
    output_b: Output
    #: Seconds the caller must still wait before handing the outputs over (the typed-prompt
    #: hold of ``pacing``): the app awaits it without holding a thread.
    hold: float = 0.0


@dataclass(frozen=True)
class Side:
    model_id: str
    name: str
    before: float | None
    after: float | None


@dataclass(frozen=True)
class Reveal:
    """The result shown after a vote."""

    vote: str
    a: Side
    b: Side
    counted: bool
    note: str = ""
    #: The logged vote's id: a visitor (or a load test) can find it in the public dataset.
    vote_id: str | None = None
    #: The battle's prompt: an API client sees which of its battles the vote was for.
    prompt: str | None = None


@dataclass
class LoadProgress:
    """Start-up replay status, for the page to show instead of a blank board."""

    done: bool = False
    files: int = 0
    votes_used: dict[str, int] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    seconds: float | None = None
    error: str | None = None


def clean_prompt(text: str, max_chars: int) -> str:
    """A typed prompt made safe: controls removed, whitespace collapsed, length bounded.

    Removed: control characters, invisible format characters (but the joiners some
    scripts need), and lone surrogates, which are not text at all (``"Hello \\ud800"``
    cannot be encoded, and crashed every later step). A prompt must keep at least
    one letter or digit: a joiner, punctuation or an emoji alone is nothing a model
    can be compared on, and only made engines fail.
    """
    if not isinstance(text, str):  # the API takes raw JSON: 123, [..] and {..} arrive as such
        raise ArenaError("A typed prompt is text.")
    kept = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind == "Cc" or ch in "\u2028\u2029":
            kept.append(" " if ch.isspace() else "")
        elif kind not in ("Cf", "Cs") or ch in _KEPT_FORMAT:
            kept.append(ch)
    cleaned = " ".join("".join(kept).split())
    if not cleaned:
        raise ArenaError("The prompt is empty once control characters and spaces are removed.")
    if len(cleaned) > max_chars:
        raise ArenaError(f"The prompt is {len(cleaned)} characters long; the limit is {max_chars}.")
    if not any(unicodedata.category(ch)[0] in "LN" for ch in cleaned):
        raise ArenaError("The prompt needs at least one letter or digit.")
    return cleaned
