"""Text from elsewhere, as a terminal, a log or a spreadsheet shows it: as text, never as a command.

Vote rows read back from a dataset anyone may have edited (model, judge, arena ids), and a
hosted service's messages, are any string. Printed raw, an escape sequence recoloured or
rewrote the reader's terminal and a newline forged a line of its own; written raw into a
CSV, a cell starting with ``=`` was a formula the spreadsheet ran. The data stays as it is
(the vote files, the JSON); these functions are for the places that show it, and
:func:`emit` prints a command's text so that a reader who goes away is noticed.
"""

from __future__ import annotations

import io
import json
import logging
import sys

#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Characters escaped inside :func:`terminal_safe`'s quotes.
_QUOTED = '"\\'


def controls_escaped(text: str) -> str:
    """``text`` with each character a terminal would act on or show as something else (a
    control character: newline, escape, bell; see ``str.isprintable``) written as JSON's
    escape (``\\n``, ``\\u001b``); every other character as it is."""
    if text.isprintable():
        return text
    return "".join(_escaped(ch) for ch in text)


def terminal_safe(text: str) -> str:
    """A name as a table prints it: as it is, unless a terminal would show it as something
    else (a control character: a newline broke the table's rows, an escape sequence
    recoloured the terminal; spaces at an end: "m1 " and " m1" looked the same), then
    quoted, with JSON's escapes (quotes and backslashes too, inside the quotes)."""
    if text.strip() == text and text.isprintable():
        return text
    inner = "".join(_escaped(ch, _QUOTED) for ch in text)
    return f'"{inner}"'


def _escaped(ch: str, also: str = "") -> str:
    """One character as it is, or as JSON writes it when a terminal would act on it."""
    return json.dumps(ch)[1:-1] if not ch.isprintable() or ch in also else ch


def spreadsheet_cell(value):
    """A CSV cell that a spreadsheet shows as the text it is: a string starting with a
    formula character gets a leading quote (which spreadsheets read as "text follows"), and
    a carriage return is written as ``\\r`` (Python's csv leaves it unquoted under "\\n"
    line ends, and every spreadsheet starts a row there). Anything else is left as it is:
    numbers, negative ones included, stay numbers."""
    if not isinstance(value, str):
        return value
    value = value.replace("\r", "\\r")
    return "'" + value if value.startswith(FORMULA_STARTS) else value


class LineFormatter(logging.Formatter):
    """Log records as one line each: the message's control characters escaped (a newline in a
    logged value forged a record, an escape sequence recoloured the terminal); a traceback
    keeps its lines, each escaped likewise."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return controls_escaped(super().formatMessage(record))

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        return _lines_escaped(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return _lines_escaped(super().formatStack(stack_info))


def _lines_escaped(text: str) -> str:
    return "\n".join(controls_escaped(line) for line in text.split("\n"))


def emit(text: str, out=None) -> None:
    """Write ``text`` to ``out`` (standard output) and flush it; BrokenPipeError if its reader
    went away before the end.

    Handed to a buffered stream in one piece larger than its buffer, the text went to the
    pipe in one write; when the reader left mid-way the stream returned the part the pipe
    had taken and dropped the rest without an error (CPython's ``BufferedWriter``), so
    ``leaderboard --format table | head -1`` ended with status 0, its output cut short
    silently. In pieces no larger than the buffer, a blocking stream raises on the write that
    fails. A stream without a binary buffer (``io.StringIO``) takes the text as it is.
    """
    out = sys.stdout if out is None else out
    if out is None:  # standard output closed (``>&-``): the text goes nowhere, as print's
        return
    raw = getattr(out, "buffer", None)
    if raw is None:
        out.write(text)
        return
    out.flush()  # what the text layer holds goes first
    data = text.encode(out.encoding or "utf-8", out.errors or "strict")
    step = io.DEFAULT_BUFFER_SIZE
    for start in range(0, len(data), step):
        raw.write(data[start : start + step])
    raw.flush()
