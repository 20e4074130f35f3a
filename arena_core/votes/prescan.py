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
_OPEN, _CLOSE, _NEWLINE = ord("{"), ord("}"), ord("\n")


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
    that Arrow would read as a second row (``{`` or ``null``). Such a line gives Arrow
    exactly one row, or an error naming its row or the next.
    """
    apart = np.ones(len(starts), dtype=bool)
    if not len(starts):
        return apart
    view = np.frombuffer(data, dtype=np.uint8)
    top = len(view) - 1
    head, tail = starts.copy(), ends - 1
    for _ in range(SPACES_LOOKED):
        head += (head < ends) & _SPACE[view[np.minimum(head, top)]]
        tail -= (tail >= starts) & _SPACE[view[np.clip(tail, 0, top)]]
    whole = head <= tail
    apart[whole] = (view[head[whole]] != _OPEN) | (view[tail[whole]] != _CLOSE)
    lo, hi = int(starts[0]), int(ends[-1])
    region = view[lo:hi]
    low = np.flatnonzero(region < 32) + lo
    suspects = [low[_CONTROL[view[low]]]]
    after = np.flatnonzero(region == _CLOSE) + lo + 1
    for _ in range(SPACES_LOOKED):
        after += (after < hi) & _SPACE[view[np.minimum(after, top)]]
    after = after[after < hi]
    suspects.append(after[_SECOND_ROW[view[after]]])
    found = np.concatenate(suspects)
    apart[np.searchsorted(starts, found, side="right") - 1] = True
    return apart
