"""The look at a damaged file's bytes: its lines, and which of them Arrow may not see."""

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_core.votes.prescan import line_bounds, lines_apart

#: Bytes close to JSON objects and to the ways they go wrong.
TOKENS = st.sampled_from([b"{", b"}", b" ", b"\t", b"\r", b"null", b"n", b'"a"', b":", b"1",
                          b",", b"\x00", b"\x0b", b"\x1f", b"[", b"]", b"\xef\xbb\xbf", b"\xc3\xa9",
                          b"\xc3", b"\xff", b"\xc0", b"\xf5", b"\xed\xa0\x80"])  # fmt: skip
SPACES = st.lists(st.sampled_from([b" ", b"\t", b"\r"]), max_size=3).map(b"".join)
LINE = st.one_of(
    st.lists(TOKENS, max_size=8).map(b"".join),
    st.tuples(SPACES, st.lists(TOKENS, max_size=6).map(b"".join), SPACES).map(
        lambda p: p[0] + b"{" + p[1] + b"}" + p[2]
    ),
)
DATA = st.tuples(st.lists(LINE, max_size=8), st.booleans()).map(
    lambda p: b"\n".join(p[0]) + (b"\n" if p[1] else b"")
)

# The definition, written independently of the numpy passes: a line goes to Arrow only if
# it is "{...}" with at most two spaces, tabs or carriage returns on either side, holds no
# control byte nor one that never occurs in UTF-8, no carriage return before its last "}"
# (Arrow ends a row there), and no "}" in it is followed (past at most two of those) by
# "{" or "n", or by a third one of them.
ONE_OBJECT = re.compile(rb"[ \t\r]{0,2}\{.*\}[ \t\r]{0,2}", re.DOTALL)
CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
SECOND_ROW = re.compile(rb"\}(?:[{n]|[ \t\r][{n]|[ \t\r]{2}[{n \t\r])")


NEVER_UTF8 = re.compile(rb"[\xf5-\xff]")


def expected_apart(line: bytes) -> bool:
    return (
        not ONE_OBJECT.fullmatch(line)
        or any(p.search(line) for p in (CONTROL, SECOND_ROW, NEVER_UTF8))
        or b"\r" in line[: line.rfind(b"}")]
    )


def lines_from(data: bytes, lo: int) -> list[bytes]:
    region = data[lo:]
    lines = region.split(b"\n")
    return lines[:-1] if region.endswith(b"\n") or not region else lines


@settings(max_examples=500, deadline=None)
@given(DATA, st.integers(0, 40))
def test_line_bounds_are_the_lines_split_at_newlines(data, lo):
    lo = data.rfind(b"\n", 0, min(lo, len(data))) + 1  # a line start, as callers give
    starts, ends = line_bounds(data, lo)
    assert [data[s:e] for s, e in zip(starts, ends, strict=True)] == lines_from(data, lo)


@settings(max_examples=1000, deadline=None)
@given(DATA, st.integers(0, 40))
def test_the_lines_set_apart_are_those_of_the_definition(data, lo):
    lo = data.rfind(b"\n", 0, min(lo, len(data))) + 1
    starts, ends = line_bounds(data, lo)
    assert lines_apart(data, starts, ends).tolist() == [
        expected_apart(line) for line in lines_from(data, lo)
    ]


def test_good_lines_with_crlf_or_spaces_around_them_go_to_arrow():
    # A file written on Windows ends every line with "\r": none of them is set apart.
    lines = [b'{"vote": "a"}\r', b' {"vote": "b", "flags": ["x}"]}\t', b'{"prompt": "{n}"}']
    data = b"\n".join(lines) + b"\n"
    assert not lines_apart(data, *line_bounds(data)).any()


def test_a_carriage_return_inside_a_line_sets_it_apart():
    # Arrow ends a row at "\r": with a block cut right after it, "{}" was read as a vote
    # and "! }" never judged (found by test_votes_tolerant with blocks of one byte).
    lines = [b'{"vote": "a"}\r ! }', b'{"vote":\r "a"}', b'\r{"vote": "a"}', b'{"vote": "a"}\r']
    data = b"\n".join(lines) + b"\n"
    assert lines_apart(data, *line_bounds(data)).tolist() == [True, True, True, False]


def test_no_lines():
    starts, ends = line_bounds(b"", 0)
    assert len(starts) == 0 and lines_apart(b"", starts, ends).dtype == np.bool_
