"""Arrow <-> numpy through buffers: the same values as pyarrow's own conversions, no pandas."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from arena_core.votes import arrow, kernels

ROOT = Path(__file__).resolve().parent.parent

NUMERIC = st.sampled_from([np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float64])


@given(hnp.arrays(NUMERIC, st.integers(0, 40)))
def test_numeric_matches_pa_array(values):
    built, reference = arrow.numeric(values), pa.array(values)
    assert built.type == reference.type and built.null_count == 0
    assert np.array_equal(built.to_numpy(), reference.to_numpy(), equal_nan=True)
    assert np.array_equal(arrow.to_numpy(built), values, equal_nan=True)


@given(st.lists(st.booleans(), max_size=70), st.integers(0, 9))
def test_booleans_round_trip_at_any_offset(values, start):
    built = arrow.numeric(np.array(values, dtype=bool))
    assert built.equals(pa.array(values, type=pa.bool_()))
    sliced = built.slice(min(start, len(values)))
    assert arrow.to_numpy(sliced).tolist() == values[min(start, len(values)) :]


@given(st.lists(st.one_of(st.none(), st.booleans()), max_size=70), st.integers(0, 9))
def test_mask_reads_nulls_as_false(values, start):
    column = pa.array(values, type=pa.bool_()).slice(min(start, len(values)))
    expected = [bool(v) for v in values[min(start, len(values)) :]]
    assert arrow.mask(column).tolist() == expected
    assert arrow.mask(pa.chunked_array([column, column], type=pa.bool_())).tolist() == expected * 2


@given(st.lists(st.text(), max_size=20))
def test_strings_match_pa_array(values):
    assert arrow.strings(values).equals(pa.array(values, type=pa.string()))


@given(st.lists(st.one_of(st.none(), st.lists(st.just("x"), max_size=3)), max_size=30))
def test_nonempty_lists(values):
    column = pa.array(values, type=pa.list_(pa.string()))
    assert arrow.nonempty(column).tolist() == [bool(v) for v in values]


def test_to_numpy_refuses_nulls_and_joins_chunks():
    with pytest.raises(ValueError, match="nulls"):
        arrow.to_numpy(pa.array([1, None]))
    chunked = pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([3], pa.int32())])
    assert arrow.to_numpy(chunked).tolist() == [1, 2, 3]
    empty = pa.chunked_array([], type=pa.int32())
    assert arrow.to_numpy(empty).dtype == np.int32 and len(arrow.to_numpy(empty)) == 0
    assert len(arrow.mask(pa.chunked_array([], type=pa.bool_()))) == 0
    assert arrow.indices([2, 0]).type == pa.int64()
    assert pc.fill_null(
        pa.array([1, None], pa.int16()), arrow.scalar(7, pa.int16())
    ).to_pylist() == [1, 7]


def test_the_leaderboard_command_never_imports_pandas(tmp_path):
    """The reason for the module: pandas costs a fresh replay 0.25-0.35 s and is not used."""
    rows = [{"schema_version": 1, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
             "ts": f"2026-11-29T17:00:{k:02d}.000Z", "arena": "tts-en", "model_a": f"m{k % 3}",
             "model_b": f"m{(k + 1) % 3}", "vote": "ab"[k % 2], "voter": f"v{k % 2}",
             "voter_kind": "human", "flags": ["rate_limited"] if k == 4 else []}
            for k in range(12)]  # fmt: skip
    (tmp_path / "votes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "tie.jsonl").write_text(json.dumps({**rows[3], "vote_id": "0"}) + "\n")
    probe = (
        "import sys; from arena_core.cli import main; "
        f"code = main(['leaderboard', '--votes', {str(tmp_path)!r}, '--arena', 'tts-en', "
        "'--format', 'json']); "
        "print('pandas' in sys.modules, code, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    assert done.stderr.split()[-2:] == ["False", "0"], done.stderr
    assert json.loads(done.stdout)["votes_used"] == 12  # 13 rows, one flagged


@given(st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=30), st.integers(0, 9))
def test_null_or_empty_matches_arrows_own_checks(values, start):
    column = pa.array(values, pa.string()).slice(min(start, len(values)))
    chunked = pa.chunked_array([column, pa.array([], pa.string()), column], type=pa.string())
    expected = [v is None or v == "" for v in values[min(start, len(values)) :]]
    assert arrow.null_or_empty(column).tolist() == expected
    assert arrow.null_or_empty(chunked).tolist() == expected * 2


LISTS = st.lists(st.one_of(st.none(), st.lists(st.just("x"), max_size=3)), max_size=30)


@given(LISTS, st.integers(0, 9), st.booleans())
def test_nonempty_reads_offsets_at_any_offset_and_width(values, start, large):
    kind = pa.large_list(pa.string()) if large else pa.list_(pa.string())
    column = pa.array(values, type=kind).slice(min(start, len(values)))
    expected = [bool(v) for v in values[min(start, len(values)) :]]
    assert arrow.nonempty(column).tolist() == expected
    assert arrow.nonempty(pa.chunked_array([column, column], type=kind)).tolist() == expected * 2
    assert arrow.nonempty(pa.nulls(3, kind)).tolist() == [False] * 3


@given(st.lists(st.one_of(st.none(), st.integers(-3, 5)), max_size=40), st.integers(0, 9))
def test_valid_integers_in_and_filled_match_compute(values, start):
    column = pa.array(values, pa.int64()).slice(min(start, len(values)))
    chunked = pa.chunked_array([column, pa.nulls(2, pa.int64()), column], type=pa.int64())
    for col in (column, chunked):
        assert arrow.valid(col).tolist() == pc.is_valid(col).to_pylist()
        allowed = pa.array([1, 2, 4], pa.int64())
        assert arrow.integers_in(col, [1, 2, 4]).tolist() == pc.is_in(col, allowed).to_pylist()
    assert arrow.filled(column, 9).tolist() == pc.fill_null(column, 9).to_pylist()
    assert arrow.filled(pa.nulls(2, pa.int32()), -1).tolist() == [-1, -1]


@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "bb", ""])), max_size=30))
def test_kernels_answer_as_pyarrow_compute(values):
    column = pa.chunked_array([pa.array(values, pa.string()), pa.array(values, pa.string())])
    assert kernels.dictionary_encode(column).equals(pc.dictionary_encode(column))
    assert kernels.unique(column).equals(pc.unique(column))
    encoded = pc.dictionary_encode(column).cast(pa.dictionary(pa.int32(), pa.string()))
    assert kernels.cast(encoded, pa.string()).equals(encoded.cast(pa.string()))
    rows = arrow.indices(list(range(len(column)))[::-2])
    assert kernels.take(column, rows).equals(column.take(rows))
    table = pa.table({"v": column})
    assert kernels.take(table, rows).equals(table.take(rows))
    with pytest.raises(pa.ArrowInvalid):
        kernels.cast(pa.array(["2026-02-30T00:00:00.000Z"]), pa.timestamp("us", tz="UTC"))


def test_the_leaderboard_command_never_imports_pyarrow_compute(tmp_path):
    """Importing it costs a fresh replay 0.03 s of CPU (see votes.kernels): a Parquet file and
    JSONL shards whose rows need sorting replay without it. (One-off voters, as in the
    bench's log: where voters repeat, the anomalous-voter test still imports it.)"""
    import pyarrow.parquet as pq

    rows = [{"schema_version": 2, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
             "ts": f"2026-11-29T17:00:{59 - k:02d}.000Z", "arena": "tts-en",
             "model_a": f"m{k % 3}", "model_b": f"m{(k + 1) % 3}", "vote": "ab"[k % 2],
             "voter": f"v{k:03d}", "voter_kind": "human", "judge": None,
             "flags": ["rate_limited"] if k == 4 else []}
            for k in range(12)]  # fmt: skip
    (tmp_path / "jsonl").mkdir()
    (tmp_path / "jsonl" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[::2]))
    (tmp_path / "jsonl" / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[1::2]))
    (tmp_path / "parquet").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "parquet" / "votes.parquet")
    for folder in ("jsonl", "parquet"):
        probe = (
            "import sys; from arena_core.cli import main; "
            f"code = main(['leaderboard', '--votes', {str(tmp_path / folder)!r}, '--arena', "
            "'tts-en', '--format', 'json']); "
            "print('pyarrow.compute' in sys.modules, code, file=sys.stderr)"
        )
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              cwd=ROOT, check=True)  # fmt: skip
        assert done.stderr.split()[-2:] == ["False", "0"], (folder, done.stderr)
        assert json.loads(done.stdout)["votes_used"] == 11  # 12 rows, one flagged


def test_a_fill_the_type_cannot_hold_is_refused_not_wrapped():
    with pytest.raises(OverflowError):
        arrow.filled(pa.array([1, None], pa.int8()), 128)
    assert arrow.filled(pa.array([1, None], pa.int8()), -128).tolist() == [1, -128]


def test_a_damaged_log_is_read_without_pandas_too(tmp_path):
    """The damaged-file path built its tables with ``from_pylist`` and ``empty_table``, which
    imported pandas: a quarter of a second of a damaged log's replay, not of a clean one's."""
    good = [{"schema_version": 1, "vote_id": f"00000000-0000-4000-8000-{k:012d}",
             "ts": f"2026-11-29T17:{k // 60:02d}:{k % 60:02d}.000Z", "arena": "tts-en",
             "model_a": f"m{k % 3}", "model_b": f"m{(k + 1) % 3}", "vote": "ab"[k % 2],
             "voter": f"v{k % 7}", "voter_kind": "human", "flags": []}
            for k in range(600)]  # fmt: skip
    lines = [json.dumps(r).encode() for r in good]
    lines[100] = lines[100].replace(b'"schema_version": 1', b'"schema_version": "1"')  # type
    lines[200] = b"[" + lines[200] + b"]"  # not an object
    lines[300] = lines[300][:40]  # cut short
    lines[400] = lines[400].replace(b'"voter": "v', b'"voter": "\xffv')  # not UTF-8
    (tmp_path / "votes.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    probe = (
        "import sys; from arena_core.cli import main; "
        f"code = main(['leaderboard', '--votes', {str(tmp_path)!r}, '--arena', 'tts-en', "
        "'--format', 'json']); "
        "print('pandas' in sys.modules, code, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    assert done.stderr.split()[-2:] == ["False", "0"], done.stderr
    assert json.loads(done.stdout)["votes_used"] == 596


def _same(left, right) -> bool:
    """Equal values, a NaN equal to a NaN (``Table.equals`` says NaN differs from itself)."""
    if isinstance(left, float) and isinstance(right, float) and left != left:
        return right != right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return type(left) is type(right) and left == right


def _value(kind: pa.DataType):
    if pa.types.is_string(kind):
        return st.text(max_size=4)
    if pa.types.is_integer(kind):
        return st.integers(-(2**63), 2**63 - 1)
    if pa.types.is_floating(kind):
        return st.floats(allow_nan=True, allow_infinity=True)
    if pa.types.is_boolean(kind):
        return st.booleans()
    return st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=3)


def _rows():
    from arena_core.votes.schema import ARROW_SCHEMA

    fields = st.fixed_dictionaries(
        {}, optional={f.name: st.one_of(st.none(), _value(f.type)) for f in ARROW_SCHEMA}
    )
    return st.lists(fields, max_size=6)


@given(_rows())
def test_rows_table_is_from_pylist_without_pandas(rows):
    from arena_core.votes.schema import ARROW_SCHEMA

    built = arrow.rows_table(rows, ARROW_SCHEMA)
    built.validate(full=True)
    reference = pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
    assert built.schema == reference.schema and built.num_rows == reference.num_rows
    for name in ARROW_SCHEMA.names:
        assert built.column(name).null_count == reference.column(name).null_count
        assert all(map(_same, built.column(name).to_pylist(), reference.column(name).to_pylist()))
    assert arrow.empty_table(ARROW_SCHEMA).equals(ARROW_SCHEMA.empty_table())
