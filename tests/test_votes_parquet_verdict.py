"""A Parquet file's fate is decided from all its contract columns, whichever a reader asks for.

The Space replays every column; the board command it prints reads the board's columns,
the revision ``vote_id`` alone, DuckDB and Spark their own few. A file one of them
refused and another read gave two boards from one dataset (and a file holding a column
twice stopped every engine). The reference here is the reader of every column.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scale_logs import NOW_US, REFUSED, hostile_log

from arena_core.leaderboard import BOARD_COLUMNS
from arena_core.scale.rules import READ_COLUMNS
from arena_core.scale.sources import odd_columns
from arena_core.votes import reasons
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS

NAMES = [f.name for f in FIELDS]
TEXT = [f.name for f in FIELDS if f.type == pa.string()]
DOUBLES = [f.name for f in FIELDS if f.type == pa.float64()]
INTEGERS = [f.name for f in FIELDS if f.type == pa.int64()]
#: What the callers in the package ask for: the Space (all), the board command, the revision.
CALLERS = [None, (*BOARD_COLUMNS, "vote_id"), ("vote_id",), READ_COLUMNS]


def _base(n: int = 4) -> pa.Table:
    return pa.Table.from_pylist([
        {"schema_version": 4, "vote_id": f"v{k}", "ts": f"2025-06-01T10:00:0{k}Z",
         "arena": "tts-en", "model_a": "m1", "model_b": "m2", "vote": "a"} for k in range(n)
    ])  # fmt: skip


def _text(last: bytes) -> pa.Array:
    return pa.array([b"ok"] * 3 + [last], pa.binary()).view(pa.string())


#: A column's values as another writer may store them, and whether they read as the contract's.
COLUMNS = st.one_of(
    st.tuples(st.sampled_from(TEXT), st.sampled_from([b"caf\xe9", b"\xff", b"\xed\xa0\x80"])).map(
        lambda c: (c[0], _text(c[1]), False)
    ),
    st.tuples(st.sampled_from(TEXT), st.sampled_from([b"ok", "café".encode()])).map(
        lambda c: (c[0], _text(c[1]), True)
    ),
    st.tuples(st.sampled_from(DOUBLES), st.integers(-(2**63), 2**63 - 1)).map(
        lambda c: (c[0], pa.array([1, 2, 3, c[1]], pa.int64()), abs(c[1]) <= 2**53)
    ),
    st.tuples(st.sampled_from(INTEGERS), st.integers(0, 2**64 - 1)).map(
        lambda c: (c[0], pa.array([4, 4, 4, c[1]], pa.uint64()), c[1] < 2**63)
    ),
    st.tuples(st.sampled_from(INTEGERS), st.sampled_from([4.0, 4.5, 1e300, -0.0])).map(
        lambda c: (c[0], pa.array([4.0, 4.0, 4.0, c[1]]), c[1] in (4.0, -0.0))
    ),
)


def _write(folder: Path, name: str, values: pa.Array) -> None:
    table = _base()
    if name in table.column_names:
        table = table.drop_columns([name])
    pq.write_table(table.append_column(name, values), folder / "x.parquet")


@settings(max_examples=60, deadline=None)
@given(column=COLUMNS, asked=st.sets(st.sampled_from(NAMES), min_size=1))
def test_a_file_is_refused_or_read_whatever_columns_are_asked_for(column, asked):
    name, values, readable = column
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write(folder, name, values)
        every = read_votes(folder, now_us=NOW_US)  # the Space's replay: every column
        assert every.skipped[reasons.UNREADABLE] == (not readable), name
        for columns in (*CALLERS[1:], sorted(asked)):
            votes = read_votes(folder, columns=columns, now_us=NOW_US)
            assert dict(votes.skipped) == dict(every.skipped), (name, columns)
            assert len(votes) == len(every), (name, columns)
        skipped = Counter()
        assert (odd_columns(str(folder / "x.parquet"), READ_COLUMNS, skipped) is None) == (
            not readable
        )
        assert dict(skipped) == ({} if readable else {reasons.UNREADABLE: 1})


@pytest.mark.parametrize("columns", CALLERS)
def test_a_contract_column_held_twice_refuses_the_file_not_the_read(tmp_path, columns):
    pq.write_table(_base().append_column("vote", pa.array(["b"] * 4)), tmp_path / "x.parquet")
    pq.write_table(_base().set_column(1, "vote_id", pa.array(list("wxyz"))), tmp_path / "y.parquet")
    votes = read_votes(tmp_path, columns=columns, now_us=NOW_US)
    assert len(votes) == 4 and dict(votes.skipped) == {reasons.UNREADABLE: 1}
    assert odd_columns(str(tmp_path / "x.parquet"), READ_COLUMNS, Counter()) is None


def test_another_writers_column_held_twice_is_never_read(tmp_path):
    table = (
        _base().append_column("note", pa.array([1] * 4)).append_column("note", pa.array([2] * 4))
    )
    pq.write_table(table, tmp_path / "x.parquet")
    for columns in CALLERS:
        assert len(read_votes(tmp_path, columns=columns, now_us=NOW_US)) == 4


def test_an_unsigned_version_is_read_below_two_to_the_63_and_refuses_the_file_above(tmp_path):
    pq.write_table(_base().set_column(0, "schema_version", pa.array([4] * 4, pa.uint64())),
                   tmp_path / "a.parquet")  # fmt: skip
    table = _base().set_column(1, "vote_id", pa.array(list("wxyz")))
    too_big = pa.array([4, 4, 4, 2**64 - 1], pa.uint64())
    pq.write_table(table.set_column(0, "schema_version", too_big), tmp_path / "b.parquet")
    for columns in CALLERS:
        votes = read_votes(tmp_path, columns=columns, now_us=NOW_US)
        assert len(votes) == 4 and dict(votes.skipped) == {reasons.UNREADABLE: 1}


@pytest.mark.parametrize("columns", CALLERS)
def test_every_reader_refuses_the_same_hostile_files(tmp_path, columns):
    folder = hostile_log(tmp_path / "votes")
    votes = read_votes(folder, columns=columns, now_us=NOW_US)
    assert dict(votes.skipped) == {reasons.UNREADABLE: len(REFUSED)}
    assert len(votes) == 8  # the good file's, and those of the unsigned version's
    for path in sorted(folder.iterdir()):
        verdict = odd_columns(str(path), READ_COLUMNS, Counter())
        assert (verdict is None) == (path.stem in REFUSED), path.name


def _two_bad_columns(folder: Path) -> Path:
    """A file whose ``prompt`` (never asked by the board) and ``vote_id`` (asked) both hold
    bytes that are not UTF-8, so the check and the read of the asked columns both fail."""
    table = _base().drop_columns(["vote_id"])
    table = table.append_column("vote_id", _text(b"\xff")).append_column("prompt", _text(b"\xfe"))
    path = folder / "x.parquet"
    pq.write_table(table, path, use_dictionary=False)
    return path


def test_the_check_beside_the_read_fails_as_the_check_before_it(tmp_path):
    """Given the path, ``read_checked`` checks the columns not asked for in a thread while it
    reads the asked ones. It must fail as the check-first order did: the check's error when
    both fail, never the asked columns handed back from a file the check refuses."""
    from arena_core.votes import parquet_verdict as pv

    path = _two_bad_columns(tmp_path)
    parquet, schema = pv.open_checked(path)
    errors = []
    for beside in (None, path):  # check first, then check beside the read
        with pytest.raises(pa.ArrowInvalid) as caught:
            pv.read_checked(parquet, schema, ["vote_id", "arena"], source=beside)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    # The prompt alone is bad: the asked columns read, yet the file is refused.
    table = _base().append_column("prompt", _text(b"\xfe"))
    pq.write_table(table, path, use_dictionary=False)
    parquet, schema = pv.open_checked(path)
    with pytest.raises(pa.ArrowInvalid):
        pv.read_checked(parquet, schema, ["vote_id", "arena"], source=path)
    assert read_votes(tmp_path, columns=BOARD_COLUMNS, now_us=NOW_US).skipped == {
        reasons.UNREADABLE: 1
    }


def test_beside_hands_back_the_read_only_once_the_check_passed():
    """``_beside``'s three outcomes, with the check made slow so the read finishes first."""
    import threading

    from arena_core.votes.parquet_verdict import _beside

    done = threading.Event()

    def slow_check(fail: bool):
        def check():
            done.wait(0.2)
            if fail:
                raise ValueError("check")

        return check

    def read():
        return "table"

    def failing_read():
        raise ValueError("read")

    assert _beside(slow_check(False), read) == "table"
    for read_fn in (read, failing_read):
        with pytest.raises(ValueError, match="check"):
            _beside(slow_check(True), read_fn)
    with pytest.raises(ValueError, match="read"):
        _beside(slow_check(False), failing_read)
    assert not any(t.name == "parquet-check" for t in threading.enumerate())


def test_the_check_beside_the_read_judges_the_file_that_was_read(tmp_path):
    """The check beside the read must read the file the asked columns come from. Opening the
    path a second time judged whatever the path named by then: a file replaced meanwhile had
    its bad ``prompt`` passed on the replacement's, and one deleted after it was opened was
    refused (before the thread, the open file was read whole)."""
    path = tmp_path / "x.parquet"
    clean = tmp_path / "clean.parquet"
    pq.write_table(_base().append_column("prompt", _text(b"\xfe")), path, use_dictionary=False)
    pq.write_table(_base().append_column("prompt", _text(b"x")), clean, use_dictionary=False)
    opened = []
    from arena_core.votes import parquet_verdict as pv
    from arena_core.votes import read as read_module

    real = pv.read_checked

    def swap_then_read(parquet, schema, columns=(), *, source=None):
        opened.append(path)
        clean.replace(tmp_path / "x.parquet")  # the bad file replaced once it is open
        return real(parquet, schema, columns, source=source)

    import unittest.mock

    with unittest.mock.patch.object(read_module, "read_checked", swap_then_read):
        votes = read_votes(tmp_path / "x.parquet", columns=BOARD_COLUMNS, now_us=NOW_US)
    assert opened and votes.skipped == {reasons.UNREADABLE: 1}  # the open file's verdict

    pq.write_table(_base(), path)

    def delete_then_read(parquet, schema, columns=(), *, source=None):
        (tmp_path / "x.parquet").unlink()  # a compaction deletes it once it is open
        return real(parquet, schema, columns, source=source)

    with unittest.mock.patch.object(read_module, "read_checked", delete_then_read):
        votes = read_votes(tmp_path / "x.parquet", columns=BOARD_COLUMNS, now_us=NOW_US)
    assert not votes.skipped and len(votes) == 4


def test_an_interrupt_during_the_read_is_not_turned_into_the_checks_refusal():
    """Ctrl-C (or SystemExit) while the asked columns are read must stop the reader, even
    when the check beside it has refused the file: raised as the check's ValueError, it
    was caught as an unreadable file and the run went on (the check first never did this:
    the read began only once the check had passed)."""
    import threading

    from arena_core.votes.parquet_verdict import _beside

    checked = threading.Event()

    def check():
        checked.set()
        raise ValueError("check")

    def interrupted_read():
        checked.wait(5)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _beside(check, interrupted_read)
