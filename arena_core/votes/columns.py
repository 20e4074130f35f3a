"""Vectorised work on Arrow string columns, for reading a million votes fast.

Two checks dominate a replay's reading time when done with general-purpose
kernels: matching every timestamp against a regular expression, and hashing
every ``vote_id`` to find duplicates. Both columns are almost always fixed-width
(canonical timestamps are 24 bytes, UUIDs 36), so we look at them as a 2-D byte
matrix: a timestamp is checked by comparing bytes at fixed positions, and ids
are fingerprinted by folding 8-byte words. Anything not fixed-width falls back
to the general path, so results never depend on which path ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from arena_core.votes.arrow import filled, indices, numeric, scalar, to_numpy
from arena_core.votes.kernels import pc

#: The canonical timestamp, byte by byte: 'd' is any digit, other bytes are literal.
CANONICAL_TS = "dddd-dd-ddTdd:dd:dd.dddZ"
_LOWEST = np.array([ord("0") if c == "d" else ord(c) for c in CANONICAL_TS], dtype=np.uint8)
_HIGHEST = np.array([ord("9") if c == "d" else ord(c) for c in CANONICAL_TS], dtype=np.uint8)
#: Two-digit fields of the canonical form: (position, lowest, highest) for the
#: month, day, hour, minute and second.
_FIELD_RANGES = ((5, 1, 12), (8, 1, 31), (11, 0, 23), (14, 0, 59), (17, 0, 59))
#: Positions of the canonical form's literal bytes.
_SEPARATORS = tuple(k for k, c in enumerate(CANONICAL_TS) if c != "d")
#: Odd 64-bit multipliers for folding words into a fingerprint (any odd constants do).
_MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
    dtype=np.uint64,
)
#: Most buckets :func:`some_repeat` counts into (32 MB of counts), and the fewest values
#: it buckets (fewer are sorted at once: quick already).
_BUCKET_BITS = 22
_SORT_FROM = 1 << 14


def byte_matrix(arr: pa.Array) -> np.ndarray | None:
    """The strings of one array as an (n, width) uint8 matrix, if all share one width."""
    if len(arr) == 0 or arr.null_count or not pa.types.is_string(arr.type):
        return None
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    widths = np.diff(offsets)
    width = int(widths[0])
    if width == 0 or not np.all(widths == width):
        return None
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data.reshape(len(arr), width)


def canonical_timestamps(column) -> bool:
    """Whether every value has the exact canonical form (e.g. 2026-11-29T17:34:36.123Z).

    Canonical values all match the reader's accepted pattern, so the regular
    expression can be skipped for them. Checked chunk by chunk, as bytes
    against the lowest and highest byte allowed at each position.
    """
    for chunk in _chunks(column):
        m = byte_matrix(chunk)
        if m is None or m.shape[1] != len(CANONICAL_TS):
            return False
        if not ((m >= _LOWEST) & (m <= _HIGHEST)).all():
            return False
        for start, low, high in _FIELD_RANGES:  # the same limits as the accepted pattern
            value = (m[:, start].astype(np.int16) - 48) * 10 + (
                m[:, start + 1].astype(np.int16) - 48
            )
            if value.min() < low or value.max() > high:
                return False
    return True


def canonical_layout(column) -> bool:
    """Whether every value is 24 bytes with the canonical form's separators in place
    (``----T::.Z`` at 4, 7, 10, 13, 16, 19, 23), whatever the other 17 bytes hold.

    A cheap first look (a few strided byte compares, no pass over every byte): of such
    values, Arrow's timestamp parser accepts exactly the canonical ones naming a real
    instant (digits in every other place, each field in range), which is the reader's
    pattern plus real days; ``votes.clean`` relies on that, and the tests pin it.
    """
    for chunk in _chunks(column):
        if not len(chunk):
            continue
        m = byte_matrix(chunk)
        if m is None or m.shape[1] != len(CANONICAL_TS):
            return False
        for pos in _SEPARATORS:
            if not np.all(m[:, pos] == _LOWEST[pos]):
                return False
    return True


def first_occurrences(column, rows: np.ndarray | None = None) -> np.ndarray:
    """For the rows ``rows`` of ``column`` (default: all, in order), which hold a value
    not seen in an earlier one of them."""
    chunks = _chunks(column)
    matrices = [byte_matrix(chunk) for chunk in chunks]
    if not matrices or any(m is None for m in matrices) or len({m.shape[1] for m in matrices}) > 1:
        values = (
            column
            if rows is None
            else pa.chunked_array(chunks, type=pa.string()).take(indices(rows))
        )
        return _first_by_dictionary(values)
    prints = np.concatenate([_fingerprints(m) for m in matrices])
    if rows is not None:
        prints = prints[rows]
    n = len(prints)
    if not some_repeat(prints, 2):  # the usual case: no repeats at all
        return np.ones(n, dtype=bool)
    order = np.argsort(prints, kind="stable")
    same = prints[order][1:] == prints[order][:-1]
    # Equal fingerprints are candidates only: confirm with the values themselves.
    candidates = np.unique(np.concatenate([order[1:][same], order[:-1][same]]))
    picked = candidates if rows is None else rows[candidates]
    values = pa.chunked_array(chunks, type=pa.string()).take(indices(picked))
    first = np.ones(n, dtype=bool)
    first[candidates[~_first_by_dictionary(values)]] = False
    return first


def may_repeat(column, limit: int, rows: np.ndarray | None = None) -> bool:
    """Whether some value may occur ``limit`` times or more among the rows picked by the
    boolean mask ``rows`` (default: all) of a string column.

    False is certain: equal strings have equal fingerprints, so no value is more frequent
    than its fingerprint. Only fixed-width columns without nulls among the rows are
    fingerprinted; anything else, and fingerprints that repeat ``limit`` times (a value
    that does, or a collision), answer True.
    """
    if rows is not None and not rows.all():
        column = column.filter(numeric(rows))
    chunks = _chunks(column)
    matrices = [byte_matrix(chunk) for chunk in chunks if len(chunk)]
    if not matrices:
        return False
    if any(m is None for m in matrices) or len({m.shape[1] for m in matrices}) > 1:
        return True
    return some_repeat(np.concatenate([_fingerprints(m) for m in matrices]), limit)


def some_repeat(prints: np.ndarray, limit: int, bits: int | None = None) -> bool:
    """Whether some value of ``prints`` (64-bit fingerprints) occurs ``limit`` times or more.

    Sorting a million fingerprints to find out took 60 ms here. For ``limit`` 3 and more
    (the anomalous-voter test asks for 5), from :data:`_SORT_FROM` values (or with ``bits``
    given, as tests do), they are first counted into ``2**bits`` buckets by their top bits
    (default: about one bucket per value, at most ``2**22``). Equal values share a bucket,
    so only the values of buckets holding ``limit`` or more can repeat that often, and
    only those are sorted: for 5, about 20,000 of a million one-off voters; 20-30 ms in
    all. The answer is the same as sorting them all. For 2 (duplicate ids), too many
    buckets hold two: counting them cost as much as the sort in a fresh process.
    """
    n = len(prints)
    if n < max(limit, 1):
        return False
    if limit <= 1:
        return True
    if bits is not None or (n >= _SORT_FROM and limit > 2):
        bits = bits or min(n.bit_length(), _BUCKET_BITS)
        bucket = (prints >> np.uint64(64 - bits)).astype(np.intp)
        crowded = np.bincount(bucket, minlength=1 << bits)[bucket] >= limit
        prints = prints[crowded]
    ordered = np.sort(prints)
    return bool(np.any(ordered[limit - 1 :] == ordered[: len(ordered) - limit + 1]))


def _chunks(column) -> list[pa.Array]:
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def _fingerprints(m: np.ndarray) -> np.ndarray:
    """Fold each row of bytes into a 64-bit number (wrapping arithmetic).

    Rows are read as 8-byte words straight from the buffer (a strided view, no
    copy); a partial last word is read as the row's last eight bytes (overlapping the
    word before it), or byte by byte in rows shorter than a word.
    """
    m = np.ascontiguousarray(m)
    n, width = m.shape
    out = np.zeros(n, dtype=np.uint64)
    starts = list(range(0, width - 7, 8))
    if width % 8 and width > 8:
        starts.append(width - 8)
    with np.errstate(over="ignore"):
        for k, start in enumerate(starts):
            word = np.ndarray((n,), "<u8", buffer=m, offset=start, strides=(width,))
            out = _fold(out, word, k)
        if width < 8:
            word = np.zeros(n, dtype=np.uint64)
            for j in range(width):
                word |= m[:, j].astype(np.uint64) << np.uint64(8 * j)
            out = _fold(out, word, 0)
    return out


def _fold(out: np.ndarray, word: np.ndarray, k: int) -> np.ndarray:
    out = (out ^ word) * _MULTIPLIERS[k % len(_MULTIPLIERS)]
    out ^= out >> np.uint64(29)
    return out


def _first_by_dictionary(column) -> np.ndarray:
    """General path: dictionary codes are assigned in order of first appearance."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    codes = pc.dictionary_encode(column).indices
    codes = to_numpy(pc.fill_null(codes, scalar(-1, codes.type)))  # nulls: one more value
    first = np.zeros(len(codes), dtype=bool)
    first[np.unique(codes, return_index=True)[1]] = True
    return first


@dataclass(frozen=True)
class Encoded:
    """A low-cardinality string column as distinct values plus one code per row.

    Codes index ``values``; -1 marks a null. Whole-column questions (which rows
    name this arena, which votes are valid) are asked once per distinct value
    and broadcast with a numpy ``take``, instead of once per row.
    """

    values: list[str]
    codes: np.ndarray

    def map(self, table: dict, missing=-1, dtype=np.int64) -> np.ndarray:
        """Each row's ``table[value]`` (``missing`` for nulls and absent values)."""
        lut = np.array([table.get(v, missing) for v in self.values] + [missing], dtype=dtype)
        codes = self.codes
        # One answer for every row (e.g. a log of one arena): no gather over a million codes.
        if len(codes) and np.all(lut[:-1] == lut[0]) and (lut[-1] == lut[0] or codes.min() >= 0):
            return np.full(len(codes), lut[0], dtype=dtype)
        return lut[codes]

    def isin(self, allowed) -> np.ndarray:
        return self.map(dict.fromkeys(allowed, True), missing=False, dtype=bool)

    def select(self, rows) -> Encoded:
        """The rows picked by a boolean mask or an index array."""
        return Encoded(self.values, self.codes[rows])


def encode(*columns) -> list[Encoded]:
    """Encode string or dictionary columns over one shared list of values.

    Sharing the values lets two columns be compared by code (model_a against
    model_b). Dictionary chunks (as Parquet delivers them) are used as they
    are; plain string chunks are dictionary-encoded first.
    """
    index: dict[str, int] = {}
    out = []
    for column in columns:
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        parts = [_chunk_codes(chunk, index) for chunk in chunks]
        codes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        out.append(codes)
    values = list(index)
    return [Encoded(values, codes) for codes in out]


def _chunk_codes(chunk: pa.Array, index: dict[str, int]) -> np.ndarray:
    if not pa.types.is_dictionary(chunk.type):
        chunk = pc.dictionary_encode(chunk)
    dictionary = chunk.dictionary.to_pylist()
    remap = np.array(
        [-1 if v is None else index.setdefault(v, len(index)) for v in dictionary] + [-1],
        dtype=np.int32,
    )
    codes = chunk.indices
    if codes.null_count:
        return remap[filled(codes, len(dictionary))]
    if np.array_equal(remap[:-1], np.arange(len(dictionary))):  # codes already: no gather
        return to_numpy(codes).astype(np.int32, copy=False)
    return remap[to_numpy(codes)]
