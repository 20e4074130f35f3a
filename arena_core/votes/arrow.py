"""Arrow arrays to and from numpy through their buffers, without importing pandas.

``pa.array``, ``pa.scalar`` and compute functions handed a Python value all ask
pyarrow's pandas shim whether the input is a pandas object, and ``to_numpy``
goes through Arrow's pandas conversion; the first of either imports pandas:
0.25 to 0.35 s of a fresh ``leaderboard`` run on the 2-core bench machine, for a
library the replay never uses. The arrays a replay moves across are row indices,
masks, codes and short lists of allowed values, so they cross here through their
buffers (``pa.Array.from_buffers``, ``np.frombuffer``), which asks pyarrow
nothing. Values are the same as ``pa.array`` and ``to_numpy`` give (tests compare).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_NUMERIC = {
    np.dtype(np.int8): pa.int8(),
    np.dtype(np.int16): pa.int16(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.uint8): pa.uint8(),
    np.dtype(np.uint16): pa.uint16(),
    np.dtype(np.uint32): pa.uint32(),
    np.dtype(np.uint64): pa.uint64(),
    np.dtype(np.float32): pa.float32(),
    np.dtype(np.float64): pa.float64(),
}


def numeric(values: np.ndarray) -> pa.Array:
    """A 1-D numeric numpy array as an Arrow array of the same type, no nulls (zero copy
    when ``values`` is contiguous); booleans become a bit-packed boolean array."""
    values = np.ascontiguousarray(values)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    try:
        kind = _NUMERIC[values.dtype]
    except KeyError:
        raise TypeError(f"no Arrow type for numpy dtype {values.dtype}") from None
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def indices(rows) -> pa.Array:
    """Row positions (any integer array) as Arrow int64, for ``take``."""
    return numeric(np.asarray(rows, dtype=np.int64))


def strings(values: Sequence[str]) -> pa.Array:
    """A short list of Python strings as an Arrow string array (e.g. a ``value_set``)."""
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(v) for v in encoded], out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), data])


def scalar(value, kind: pa.DataType) -> pa.Scalar:
    """A numeric Arrow scalar of type ``kind`` (e.g. the fill value of ``pc.fill_null``)."""
    return numeric(np.array([value], dtype=kind.to_pandas_dtype()))[0]


def to_numpy(values) -> np.ndarray:
    """A numeric or boolean Arrow array (or chunked array) without nulls, as numpy: a
    read-only view of the buffer when it has one chunk, booleans unpacked to ``bool``."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if len(chunks) == 1:
        return _chunk_numpy(chunks[0])
    kind = np.bool_ if pa.types.is_boolean(values.type) else values.type.to_pandas_dtype()
    return np.concatenate([np.zeros(0, dtype=kind), *(_chunk_numpy(c) for c in chunks)])


def mask(values) -> np.ndarray:
    """A boolean Arrow array (or chunked array) as a numpy mask, nulls as False."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [_chunk_numpy(c, nulls_false=True) for c in chunks]
    return parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0, dtype=bool), *parts])


def _chunk_numpy(arr: pa.Array, *, nulls_false: bool = False) -> np.ndarray:
    boolean = pa.types.is_boolean(arr.type)
    if arr.null_count and not (nulls_false and boolean):
        raise ValueError("the array has nulls")
    if nulls_false and not boolean:
        raise TypeError(f"expected a boolean array, got {arr.type}")
    n, start = len(arr), arr.offset
    if boolean:
        out = _bits(arr.buffers()[1], start, n)
        if arr.null_count:
            out &= _bits(arr.buffers()[0], start, n)
        return out
    if n == 0:
        return np.zeros(0, dtype=arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=start + n)[
        start:
    ]


def _bits(buffer, start: int, n: int) -> np.ndarray:
    """``n`` bits of an Arrow bitmap from bit ``start``, as bools."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    packed = np.frombuffer(buffer, dtype=np.uint8, count=(start + n + 7) // 8)
    return np.unpackbits(packed, bitorder="little", count=start + n)[start:].astype(bool)


def nonempty(lists) -> np.ndarray:
    """Which rows of a list column hold at least one item (a null list holds none), from
    its offsets and validity bitmap (``pc.list_value_length`` would import
    ``pyarrow.compute``, see :mod:`~arena_core.votes.kernels`)."""
    parts = [np.zeros(0, dtype=bool)]
    for chunk in _chunks(lists):
        n, start = len(chunk), chunk.offset
        if n == 0:
            continue
        if chunk.null_count == n:
            parts.append(np.zeros(n, dtype=bool))
            continue
        width = np.int64 if pa.types.is_large_list(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width, count=start + n + 1)[start:]
        parts.append((offsets[1:] > offsets[:-1]) & valid(chunk))
    return np.concatenate(parts)


def valid(values) -> np.ndarray:
    """Which rows of an Arrow array (or chunked array) are not null: ``pc.is_valid``, read
    from the validity bitmaps."""
    parts = [np.zeros(0, dtype=bool)]
    for chunk in _chunks(values):
        n = len(chunk)
        if chunk.null_count == 0:
            parts.append(np.ones(n, dtype=bool))
        elif chunk.null_count == n:
            parts.append(np.zeros(n, dtype=bool))
        else:
            parts.append(_bits(chunk.buffers()[0], chunk.offset, n))
    return np.concatenate(parts)


def integers_in(values, allowed) -> np.ndarray:
    """Which rows of an integer column hold one of ``allowed`` (nulls: False), as
    ``pc.is_in`` answers for a value set without nulls."""
    allowed = np.asarray(allowed, dtype=np.int64)
    parts = [np.zeros(0, dtype=bool)]
    for chunk in _chunks(values):
        if not pa.types.is_integer(chunk.type):
            raise TypeError(f"expected integers, got {chunk.type}")
        n = len(chunk)
        if chunk.null_count == n:
            parts.append(np.zeros(n, dtype=bool))
            continue
        kind = chunk.type.to_pandas_dtype()
        numbers = np.frombuffer(chunk.buffers()[1], dtype=kind, count=chunk.offset + n)
        found = np.isin(numbers[chunk.offset :], allowed)
        parts.append(found & valid(chunk) if chunk.null_count else found)
    return np.concatenate(parts)


def filled(values: pa.Array, fill) -> np.ndarray:
    """A numeric Arrow array as numpy with its nulls replaced by ``fill``:
    ``pc.fill_null``, from the buffers (the values under a null slot are never read). A
    ``fill`` the type cannot hold raises OverflowError, as ``pc.fill_null`` refuses it,
    instead of wrapping round."""
    n = len(values)
    kind = values.type.to_pandas_dtype()
    fill = np.asarray(fill, dtype=kind)
    if values.null_count == n:
        return np.full(n, fill, dtype=kind)
    numbers = np.frombuffer(values.buffers()[1], dtype=kind, count=values.offset + n)
    numbers = numbers[values.offset :]
    return np.where(valid(values), numbers, fill) if values.null_count else numbers


def _chunks(values) -> list:
    return values.chunks if isinstance(values, pa.ChunkedArray) else [values]


def null_or_empty(strings_column) -> np.ndarray:
    """Which rows of a string column are null or the empty string, from its validity
    bitmap and offsets (no comparison of a million strings)."""
    chunks = (
        strings_column.chunks if isinstance(strings_column, pa.ChunkedArray) else [strings_column]
    )
    parts = [np.zeros(0, dtype=bool)]
    for chunk in chunks:
        n, start = len(chunk), chunk.offset
        if n == 0:
            continue
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=start + n + 1)[start:]
        out = offsets[1:] == offsets[:-1]
        if chunk.null_count:
            out |= ~_bits(chunk.buffers()[0], start, n)
        parts.append(out)
    return np.concatenate(parts)


def rows_table(rows: Sequence[dict], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` for the vote contract's column types
    (strings, 64-bit integers, doubles, booleans, lists of strings), a missing key or None
    a null, built from buffers: ``from_pylist`` asks pandas about every column (a tenth
    to a third of a second, the first time, in a fresh process). Rows are those a reader
    has already checked against the contract (``lines.judge_line``): values are not checked
    here, and a wrong type may be converted (``True`` as 1, ``1`` in a boolean as False)
    where ``from_pylist`` would raise."""
    return pa.Table.from_arrays(
        [_column([row.get(field.name) for row in rows], field.type) for field in schema],
        schema=schema,
    )


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``, which asks pandas too."""
    return pa.Table.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def _column(values: list, kind: pa.DataType) -> pa.Array:
    """One column of :func:`rows_table`."""
    n = len(values)
    present = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    nulls = n - int(present.sum())
    validity = pa.py_buffer(np.packbits(present, bitorder="little")) if nulls else None
    if pa.types.is_string(kind):
        text = strings([v if v is not None else "" for v in values])
        return pa.Array.from_buffers(kind, n, [validity, *text.buffers()[1:]], nulls)
    if pa.types.is_list(kind):
        lengths = [len(v) if v is not None else 0 for v in values]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        items = _column([item for v in values if v is not None for item in v], kind.value_type)
        buffers = [validity, pa.py_buffer(offsets)]
        return pa.Array.from_buffers(kind, n, buffers, nulls, children=[items])
    if pa.types.is_boolean(kind):
        bits = np.fromiter((v is True for v in values), dtype=bool, count=n)
        data = pa.py_buffer(np.packbits(bits, bitorder="little"))
        return pa.Array.from_buffers(kind, n, [validity, data], nulls)
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise TypeError(f"no column of type {kind} from Python values")
    numbers = np.array([v if v is not None else 0 for v in values], dtype=kind.to_pandas_dtype())
    return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(numbers)], nulls)
