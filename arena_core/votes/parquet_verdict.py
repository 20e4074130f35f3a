"""Whether a Parquet vote file is read at all: one verdict from every contract column it holds.

A file is refused whole (skipped and counted as ``unreadable_file``) when one of its
contract columns cannot be read as the contract's type without losing a value: a
mistyped column, a column held twice, bytes that are not UTF-8 in a text column, an
integer a double cannot hold exactly, an unsigned one above ``2**63 - 1``, a float with a
fraction where the contract has integers. The verdict is reached from *all* the file's
contract columns, whichever columns a reader asks for: otherwise the Space's replay (every
column) refused a file that the board command it prints (the board's columns) read, and
the two boards differed. The in-process reader, DuckDB and Spark share this module
(:func:`~arena_core.scale.sources.odd_columns`), so they refuse the same files.

Cost: a column is read to be checked only when its values can fail. Numbers whose file
type the contract's holds exactly (``int32`` as ``int64``, ``float32`` as ``float64``,
the contract's own types) are judged by type alone, so a well-typed file costs only its
text columns' UTF-8 check. Parquet statistics are not used: a hostile file can carry
false ones, and a check they passed would differ from the cast of a reader that reads
the column. Text columns that a Parquet dictionary holds (few distinct values: prompts,
model names) are read as dictionaries, so only their distinct values are decoded, and all
the dictionary's entries are checked (as DuckDB checks them); which columns are read so
depends on the file's metadata alone (:func:`read_modes`), so every reader of a file
reaches the same verdict. Left: an entry no row uses, in the dictionary of a column read
plain (long distinct values, such as ids), is not seen here, and DuckDB stops on it
(:class:`~arena_core.scale.connection.EngineError`, exit status 2).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.votes.clean import CATEGORICAL
from arena_core.votes.schema import FIELDS

_FIELD_TYPES = {f.name: f.type for f in FIELDS}
#: Most bytes per row (uncompressed) of a text column read as a dictionary when it is not
#: categorical: a dictionary-encoded column stores a small index per row, a plain one at
#: least 4 bytes of length and its text (a unique id: ~40).
DICTIONARY_BYTES_PER_ROW = 8
#: Rows per batch of the columns read only to be checked (8,192: the memory they take in a
#: fresh process was ~20 MB less than at 65,536, at the same CPU time, for 1M votes).
CHECK_ROWS = 1 << 13


def open_checked(path) -> tuple[pq.ParquetFile, pa.Schema]:
    """The file opened with its text columns' read modes (:func:`read_modes`), and its
    schema; ValueError when a contract column is held twice or has a type the contract's
    cannot hold (:func:`castable`). Its values are checked by :func:`read_checked`."""
    meta = pq.read_metadata(path)
    schema = meta.schema.to_arrow_schema()
    held = Counter(name for name in schema.names if name in _FIELD_TYPES)
    twice = sorted(name for name, n in held.items() if n > 1)
    if twice:
        raise ValueError(f"column {twice[0]!r} appears {held[twice[0]]} times")
    for name in held:
        have = schema.field(name).type
        if not castable(have, _FIELD_TYPES[name]):
            raise ValueError(f"column {name!r} has type {have}")
    # One file through ParquetFile, not pq.read_table: the latter imports pyarrow.dataset
    # (and with it pandas), a tenth of a second of a fresh CLI run for nothing.
    parquet = pq.ParquetFile(path, metadata=meta, read_dictionary=read_modes(meta, schema))
    return parquet, schema


def read_modes(meta: pq.FileMetaData, schema: pa.Schema) -> list[str]:
    """The contract text columns every reader of this file reads as dictionaries: the
    categorical ones, and those the file stores dictionary-encoded (judged from its
    metadata, so the choice depends on the file alone, never on what a reader asks)."""
    index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    modes = []
    for name in _present(schema):
        if not _is_text(_plain(schema.field(name).type)) or name not in index:
            continue
        chunks = [meta.row_group(g).column(index[name]) for g in range(meta.num_row_groups)]
        size = sum(c.total_uncompressed_size for c in chunks)
        if name in CATEGORICAL or (
            all(c.has_dictionary_page for c in chunks)
            and size <= DICTIONARY_BYTES_PER_ROW * max(meta.num_rows, 1)
        ):
            modes.append(name)
    return modes


def read_checked(
    parquet: pq.ParquetFile, schema: pa.Schema, columns: Iterable[str] = (), *, source=None
) -> pa.Table:
    """The file's ``columns`` (those it holds), read once every value of its contract
    columns, asked for or not, is known to read as the contract's type; ValueError (Arrow's
    errors are ValueErrors) otherwise. Columns whose type settles it are not read for the
    check. The others not asked for are read :data:`CHECK_ROWS` rows at a time, so the same
    little memory serves every batch and the check adds little to the peak or to a fresh
    process's page faults (read with the asked columns, it added ~70 MB at 1M votes; a row
    group at a time, ~30 MB).

    Given ``source``, the open file ``parquet`` reads (a :class:`pyarrow.NativeFile`: a path
    opened again could name a file that replaced it by then), that check runs on a second
    handle of it in a thread while the asked columns are read: both spend most of their
    time in Arrow's C++ code, which lets go of the interpreter, so on two cores the two take
    about the time of the longer one: for 1M votes here, 0.16 s instead of 0.26 s in a warm
    process, and 0.18 s instead of 0.20-0.23 s in a fresh one, where touching new memory
    costs as much as the decoding. Without it, the check comes first. Either way the asked
    columns are returned only if the check passed, and when both fail the check's error is
    the one raised, as when it ran first."""
    columns = [c for c in columns if c in schema.names]
    extra = [n for n in _present(schema)
             if n not in columns and needs_values(schema.field(n).type, _FIELD_TYPES[n])]  # fmt: skip

    def check(handle: pq.ParquetFile) -> None:
        for batch in handle.iter_batches(CHECK_ROWS, columns=extra):
            check_values(batch)

    def read() -> pa.Table:
        table = parquet.read(columns=columns)
        check_values(table)
        return table

    if not extra:
        return read()
    if source is None or not columns:
        check(parquet)
        return read()
    meta = parquet.metadata
    twin = pq.ParquetFile(source, metadata=meta, read_dictionary=read_modes(meta, schema))
    return _beside(lambda: check(twin), read)


def _beside(check, read):
    """``read()``'s result once ``check()``, run in a thread meanwhile, has passed; the
    check's error first when both fail."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            check()
        except BaseException as exc:  # handed to the caller's thread below
            failed.append(exc)

    thread = threading.Thread(target=run, name="parquet-check", daemon=True)
    thread.start()
    try:
        table = read()
    except Exception:  # an interrupt (Ctrl-C, SystemExit) is raised as is, at once: made the
        # check's refusal, it was caught as an unreadable file and the run went on
        thread.join()
        if failed:
            raise failed[0] from None
        raise
    thread.join()
    if failed:
        raise failed[0]
    return table


def check_values(table: pa.Table) -> None:
    """Raise ValueError unless every contract column of ``table`` (as read from a Parquet
    file) holds valid UTF-8 text, dictionaries included, and casts to the contract's type
    without losing a value."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        want = _FIELD_TYPES.get(name)
        if want is None:
            continue
        if _holds_text(column.type):
            column.validate(full=True)  # invalid UTF-8, in a value or a dictionary
        elif needs_values(column.type, want):
            column.cast(want)  # ArrowInvalid: a fraction, or out of the contract's range


def needs_values(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type ``have`` must be read to know it reads as ``want``: text
    (UTF-8), unsigned 64-bit integers (above ``2**63 - 1``), floats where the contract has
    integers (fractions) and 64-bit integers where it has doubles (beyond ``2**53``)."""
    if _holds_text(have):
        return True
    if pa.types.is_integer(want):
        return pa.types.is_floating(have) or have == pa.uint64()
    if pa.types.is_floating(want):
        return pa.types.is_integer(have) and have.bit_width == 64
    return False


def castable(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a Parquet column of type ``have`` can be read as the contract's ``want``
    without losing values, judged by the types alone (:func:`read_checked` checks the
    values of those that can still fail).

    A column of Arrow's null type (what pyarrow and pandas infer for a column that is
    null or ``[]`` in every row, e.g. ``flags`` of a file without a flagged vote) holds no
    value to lose: it reads as the contract's type, all null. A floating column where the
    contract has integers is what pandas makes of an integer column holding a null (a
    published file read with ``pd.read_parquet`` and saved back); it is read when every
    value is whole, and refuses the file otherwise."""
    if pa.types.is_null(have):
        return True
    if pa.types.is_dictionary(have):
        have = have.value_type
    if pa.types.is_string(want):
        return _is_text(have)
    if pa.types.is_integer(want):  # a float column's values must be whole (checked on read)
        return pa.types.is_integer(have) or pa.types.is_floating(have)
    if pa.types.is_floating(want):
        return pa.types.is_floating(have) or pa.types.is_integer(have)
    if pa.types.is_boolean(want):
        return pa.types.is_boolean(have)
    return (pa.types.is_list(have) or pa.types.is_large_list(have)) and castable(
        have.value_type, pa.string()
    )


def _present(schema: pa.Schema) -> list[str]:
    return [name for name in _FIELD_TYPES if name in schema.names]


def _is_text(kind: pa.DataType) -> bool:
    return (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    )


def _plain(kind: pa.DataType) -> pa.DataType:
    return kind.value_type if pa.types.is_dictionary(kind) else kind


def _holds_text(kind: pa.DataType) -> bool:
    """Text, a dictionary of text, or a list of either (``flags``)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type
    return _is_text(_plain(kind))
