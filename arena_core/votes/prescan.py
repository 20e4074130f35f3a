"""Which lines of a damaged JSONL file Arrow may see: a vectorised look at the bytes.

Streaming a damaged file through Arrow (:mod:`~arena_core.votes.tolerant`) maps Arrow's
rows back to the file's lines by counting, which holds only if every line handed to
Arrow gives exactly one row or an error. :func:`lines_apart` finds, with a few numpy
passes over the bytes (no Python loop per line, and numpy lets go of the GIL, so blocks
of a file are scanned on every core), the lines that might not, and the lines that are
plainly not one JSON object; these go to the line-by-line reference reader instead.
Sending a good line there costs only time: the reference reader judges any line.
"""

from __future__ import annotations

import numpy as np

#: Bytes Arrow's parser skips around a value on one line (JSON's whitespace less ``\n``).
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[ord(" "), ord("\t"), ord("\r")]] = True
#: After a ``}`` (and spaces), the bytes that begin a value Arrow turns into a row of its
#: own, with no error: another object, or ``null`` (pyarrow 26.0.1 reads a line
#: ``{...} null{...}`` as three rows). A space still there after :data:`SPACES_LOOKED`
#: steps counts too, so a line is never let through unlooked at.
_SECOND_ROW = _SPACE.copy()
_SECOND_ROW[[ord("{"), ord("n")]] = True
#: Control bytes (below 0x20, other than tab, newline and carriage return): not JSON
#: outside a string nor raw inside one. Arrow's parser stops at a NUL byte and then
#: refuses the block without naming a row, which would end the stream.
_CONTROL = np.zeros(256, dtype=bool)
_CONTROL[:32] = True
_CONTROL[[ord("\t"), ord("\n"), ord("\r")]] = False
#: Spaces, tabs or carriage returns looked past at either end of a line and after each
#: ``}``; a line with more is judged apart (a CRLF line ending needs one).
SPACES_LOOKED = 2
#: The bytes from which on a byte is never part of UTF-8 (0xC0 and 0xC1 neither, but they
#: are left to the check of each batch, as are other bad sequences).
_NEVER_UTF8 = 0xF5
_OPEN, _CLOSE, _NEWLINE, _RETURN = ord("{"), ord("}"), ord("\n"), ord("\r")


def line_bounds(data: bytes, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (excluding the newline) of each line of ``data[lo:hi]`` (``lo`` at
    a line start), as offsets in ``data``: the pieces of ``data[lo:hi].split(b"\\n")``
    less an empty one after a final newline."""
    hi = len(data) if hi is None else hi
    view = np.frombuffer(data, dtype=np.uint8)[lo:hi]
    at = np.flatnonzero(view == _NEWLINE).astype(np.int64) + lo
    starts = np.concatenate([np.array([lo], dtype=np.int64), at + 1])
    ends = np.concatenate([at, np.array([hi], dtype=np.int64)])
    if starts[-1] == hi:  # nothing after the last newline (or nothing at all)
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def lines_apart(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which of the lines (``starts``/``ends`` from :func:`line_bounds`) to judge apart.

    A line is handed to Arrow only if, past a few spaces, tabs or carriage returns at
    either end, it begins with ``{`` and ends with ``}`` (so it is not blank and cannot
    start with ``null`` or a byte of a byte-order mark, which Arrow must never see at a
    block's start), holds no control byte, and no ``}`` in it is followed by a value
    that Arrow would read as a second row (``{`` or ``null``), and no carriage return
    before its last ``}``: Arrow's parser ends a row at one, so a block cut right after it
    would give ``{...}\r...`` a row and never see the rest of the line. Such a line gives
    Arrow exactly one row, or an error naming its row or the next. Lines with a byte that is
    never UTF-8 (0xF5 to 0xFF) are set apart too: Arrow reads most of them, and finding
    them in a batch (:func:`~arena_core.votes.tolerant._not_utf8`) costs more.

    The bytes looked for one by one (control bytes, braces) are first counted: where the
    count is what the newlines, the closing braces and the lines already set apart
    account for, there is nothing to find.
    """
    if not len(starts):
        return np.zeros(0, dtype=bool)
    view = np.frombuffer(data, dtype=np.uint8)
    apart, closed, tail = _not_one_object(view, starts, ends)
    lo, hi = int(starts[0]), int(ends[-1])
    region = view[lo:hi]
    odd = np.flatnonzero(apart).tolist()

    def unexplained(test, explained: int) -> bool:
        """Whether more bytes pass ``test`` than the lines set apart and ``explained``."""
        explained += sum(int(np.count_nonzero(test(view[starts[k] : ends[k]]))) for k in odd)
        return int(np.count_nonzero(test(region))) > explained

    found = []
    if unexplained(lambda b: b < 32, len(starts) - 1):  # more than the newlines
        low = np.flatnonzero(region < 32) + lo
        found.append(low[_CONTROL[view[low]]])
        returns = low[view[low] == _RETURN]  # those before their line's end (past spaces)
        found.append(returns[returns < tail[np.searchsorted(starts, returns, "right") - 1]])
    if unexplained(lambda b: b == _CLOSE, int(np.count_nonzero(closed & ~apart))):
        found.append(_second_rows(view, lo, hi))  # some "}" does not end its line
    found.append(never_utf8(view, lo, hi))
    if found:
        apart[np.searchsorted(starts, np.concatenate(found), side="right") - 1] = True
    return apart


def _not_one_object(view: np.ndarray, starts, ends) -> tuple[np.ndarray, ...]:
    """Lines that, past a few spaces, do not begin with ``{`` and end with ``}``, the
    lines that end with ``}``, and where each line ends past those spaces (its last
    byte's offset; before its start if it is all spaces)."""
    top = len(view) - 1
    head, tail = starts.copy(), ends - 1
    for _ in range(SPACES_LOOKED):
        head += (head < ends) & _SPACE[view[np.minimum(head, top)]]
        tail -= (tail >= starts) & _SPACE[view[np.clip(tail, 0, top)]]
    whole = head <= tail
    closed = np.zeros(len(starts), dtype=bool)
    closed[whole] = view[tail[whole]] == _CLOSE
    apart = np.ones(len(starts), dtype=bool)
    apart[whole] = (view[head[whole]] != _OPEN) | ~closed[whole]
    return apart, closed, tail


def never_utf8(view: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Offsets in ``view[lo:hi]`` of the bytes never part of UTF-8 (:data:`_NEVER_UTF8`)."""
    if view[lo:hi].max(initial=0) < _NEVER_UTF8:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(view[lo:hi] >= _NEVER_UTF8) + lo


def _second_rows(view: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Offsets of the bytes in ``view[lo:hi]`` that follow a ``}`` (past a few spaces) and
    begin a second row (:data:`_SECOND_ROW`)."""
    top = len(view) - 1
    after = np.flatnonzero(view[lo:hi] == _CLOSE) + lo + 1
    for _ in range(SPACES_LOOKED):
        after += (after < hi) & _SPACE[view[np.minimum(after, top)]]
    after = after[after < hi]
    return after[_SECOND_ROW[view[after]]]
