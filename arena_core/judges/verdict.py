"""Reading an LLM judge's reply: its verdict, or :class:`~arena_core.judges.base.JudgeError`.

The judge's call is never guessed (:func:`parse_verdict`). An answer under test may plant a
verdict line for the judge to quote ("Verdict: A"). A labelled verdict line before the
reply's last that repeats a line the judge was shown may be such a quote: it is left out when
the reply ends with a verdict line, as the judging prompt asks, and otherwise the reply is
unreadable (a failed judgement, never a planted or a flipped one). The last line is the
judge's even when an answer holds the same words, so planting the opponent's verdict vetoes
nothing from a judge that ends with its verdict. Verdict lines that still disagree make the
reply unreadable, and characters that render as nothing are dropped first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from arena_core.backends.base import one_line
from arena_core.judges.base import JudgeError

#: Longest excerpt of an unreadable reply quoted in the error.
REPLY_EXCERPT_CHARS = 120

#: A reasoning model's visible thinking, which may weigh verdicts it then rejects.
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
#: Markdown and quoting around a verdict (``**A**``, ``[[B]]``, ``"tie"``, ``> Verdict``).
_DECORATION = str.maketrans(dict.fromkeys("*`#\"'[](){}<>~_-–—", " "))
#: One verdict: a side (optionally "answer A", "assistant B"), tie, or both bad.
_VERDICT_WORDS = (
    r"(?:(?:answer|assistant|response|model)(?:\s*:\s*|\s+))?(?P<side>a|b)"
    r"|(?P<tie>tie)|(?P<bad>both\s+(?:are\s+)?bad)"
)
#: A line naming the verdict: "Verdict: A", "Final verdict - tie", "My final answer is B".
#: A plain "the answer is A" is not one: in a quiz prompt it may name the quiz's option.
_KEYWORD_LINE = re.compile(
    r"(?:(?:my|the|final|overall)\s+)*(?:verdict|decision|judge?ment|winner|choice"
    rf"|(?:final|better|best)\s+answer)\s*(?:is\s*)?[:=]?\s*(?:{_VERDICT_WORDS})"
)
#: A line that is a verdict and nothing else: "A", "Tie.", "**Both bad**".
_BARE_LINE = re.compile(_VERDICT_WORDS)
#: A verdict line's label, whatever follows ("Verdict: the first one" is one; "The
#: decision was close" and "The better answer is B because..." are prose, not labels).
_KEYWORD_LABEL = re.compile(
    r"(?:(?:my|the|final|overall)\s+)*(?:verdict|decision|judge?ment|winner|choice"
    r"|(?:final|better|best)\s+answer)\s*[:=]"
)


def _visible(text: str) -> str:
    """``text`` without format characters (Unicode category Cf: zero-width space, joiners,
    direction marks, byte-order mark, soft hyphen), which render as nothing: one on the
    judge's last verdict line made it unreadable, and an earlier verdict (one an answer
    planted, quoted by the judge) was read instead."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def _normalised(line: str) -> str:
    flat = unicodedata.normalize("NFKC", line).lower().translate(_DECORATION)
    return " ".join(flat.split()).rstrip(" .!")


def _choice(pattern: re.Pattern, line: str) -> str | None:
    found = pattern.fullmatch(_normalised(line))
    if found is None:
        return None
    if found["side"]:
        return found["side"]
    return "tie" if found["tie"] else "both_bad"


def parse_verdict(reply: str, quoted: Iterable[str] = ()) -> tuple[str, str]:
    """``(choice, justification)`` from a judge's reply; :class:`JudgeError` if unreadable.

    The verdict is the line naming it ("Verdict: A", any case, markdown or
    brackets around it); failing that, lines that are a bare verdict ("B",
    "Tie.", "**Both bad**"), which must all agree. ``quoted``: the texts the judge
    was shown (the prompt and both answers); see :func:`_own` for a verdict line that
    repeats one of their lines. The judge's call is never guessed, so these replies are unreadable:
    verdict lines that disagree, a last bare line that contradicts the verdict
    lines, a last line labelled as a verdict that names none ("Verdict: the first one";
    a closing remark such as "The better answer is B because..." is prose, and the
    verdict line before it is read), and a reply with no verdict (a planted verdict
    quoted, then prose: a failed judgement, never a planted win). ``<think>`` blocks
    are skipped, and format characters dropped (:func:`_visible`).
    """
    text = _visible(_THINKING.sub("\n", reply))
    if "</think>" in text.lower():  # the opening tag was in the chat template, not the reply
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    lines = [line for line in text.splitlines() if line.strip()]
    last = len(lines) - 1
    keyword = [(i, c) for i, line in enumerate(lines) if (c := _choice(_KEYWORD_LINE, line))]
    bare = [(i, c) for i, line in enumerate(lines) if (c := _choice(_BARE_LINE, line))]
    last_bare = bare[-1] if bare and bare[-1][0] == last else None
    read_last = (bool(keyword) and keyword[-1][0] == last) or last_bare
    keyword = _own(keyword, lines, quoted, read_last, reply)
    # A last line labelled as a verdict that names none: the judge's call, unread.
    if lines and not read_last and _KEYWORD_LABEL.match(_normalised(lines[-1])):
        raise JudgeError(f"unreadable reply {_excerpt(reply)}: its last line is no verdict")
    if keyword:
        choice = keyword[-1][1]
        if len({c for _, c in keyword}) > 1 or (last_bare and last_bare[1] != choice):
            raise JudgeError(f"contradictory reply {_excerpt(reply)}")
    elif bare and len({c for _, c in bare}) == 1:
        choice = bare[0][1]
    else:
        problem = "contradictory" if bare else "unreadable"
        raise JudgeError(f"{problem} reply {_excerpt(reply)}: no single A, B, tie or both bad")
    verdict_lines = {i for i, _ in keyword} | {i for i, _ in bare}
    reason = " ".join(line for i, line in enumerate(lines) if i not in verdict_lines)
    return choice, one_line(reason) if reason.strip() else ""


def _own(keyword: list, lines: list[str], quoted: Iterable[str], read_last, reply: str) -> list:
    """The labelled verdict lines that are the judge's own. One before the last line that
    repeats a line the judge was shown may be a quote of a planted verdict: it is left out
    when the reply ends with a verdict line, as the judging prompt asks (that line is the
    judge's, whatever an answer holds); else the reply is unreadable, since whose line it
    is cannot be told. Bare lines and headers ("B", "### Answer A") are never taken for
    quotes: dropping them let an answer that held the judge's own words turn its verdict
    into the other side's header."""
    shown = {_normalised(line) for text in quoted for line in _visible(text).splitlines()}
    quotes = {i for i, _ in keyword if i != len(lines) - 1 and _normalised(lines[i]) in shown}
    if quotes and not read_last:
        raise JudgeError(f"unreadable reply {_excerpt(reply)}: a verdict line repeats the "
                         "texts judged and none ends the reply")  # fmt: skip
    return [(i, c) for i, c in keyword if i not in quotes]


def _excerpt(reply: str) -> str:
    flat = " ".join(reply.split())
    cut = flat if len(flat) <= REPLY_EXCERPT_CHARS else flat[: REPLY_EXCERPT_CHARS - 1] + "…"
    return repr(cut)
