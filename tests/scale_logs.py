"""A small, damaged Parquet vote log for the scale engines' tests (DuckDB, Spark, Python).

Every rule of the reader and of a board's selection has rows to act on: each
kind of bad row, duplicates decided by time, by file order and by an invalid
first occurrence, flags (including a NULL list and a list of one NULL), judges'
votes, rows without a voter kind, a file without the ``voter`` and ``judge``
columns, a file with a mistyped column (refused whole), a file whose empty columns pyarrow
typed as null (read, not refused), integer columns as pandas saves them back (float64: read
when whole, refused whole with a fraction), and repeat voters among
whom a few vote against the crowd (what the anomalous-voter test flags).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from arena_core.scale.synthetic import SynthSpec, generate

#: The reader's clock for these logs (2026-01-01T00:00:00Z): later rows are from the future.
NOW_US = 1_767_225_600_000_000
_SCHEMA = pa.schema([
    ("schema_version", pa.int64()), ("vote_id", pa.string()), ("ts", pa.string()),
    ("arena", pa.string()), ("model_a", pa.string()), ("model_b", pa.string()),
    ("vote", pa.string()), ("category", pa.string()), ("voter", pa.string()),
    ("voter_kind", pa.string()), ("judge", pa.string()), ("flags", pa.list_(pa.string())),
])  # fmt: skip


def _row(vote_id, ts, a="m1", b="m2", vote="a", **extra) -> dict:
    row = {"schema_version": 3, "vote_id": vote_id, "ts": ts, "arena": "tts-en", "model_a": a,
           "model_b": b, "vote": vote, "category": "en", "voter": None, "voter_kind": "human",
           "judge": None, "flags": []}  # fmt: skip
    row.update(extra)
    return row


#: Rows of the first hand-made file: one of each bad kind, and duplicates.
FIRST = [
    _row("ok-1", "2025-06-01T10:00:00.000Z"),
    _row("ok-2", "2025-06-01T10:00:01+02:00", "m2", "m3", "b"),  # an offset: 08:00:01Z
    _row("ok-3", "2025-06-02T10:00:00.5Z", "m3", "m1", "tie", category="ja"),
    _row("ok-4", "2025-06-02T11:00:00Z", "m1", "m3", "both_bad", category=None),
    _row("ok-5", "2025-06-03T11:00:00Z", "m1", "m2", "b", voter_kind=None),
    _row("flag-1", "2025-06-03T12:00:00Z", flags=["rate_limited"]),
    _row("flag-2", "2025-06-03T12:00:01Z", flags=[None]),
    _row("flag-3", "2025-06-03T12:00:02Z", "m2", "m1", flags=None),  # NULL list: not flagged
    _row("judge-1", "2025-06-04T12:00:00Z", voter_kind="judge", judge="j1", voter="judge:j1"),
    _row("judge-2", "2025-06-04T12:00:01Z", "m3", "m2", "b", voter_kind="judge", judge="j2"),
    _row("other-arena", "2025-06-04T12:00:02Z", arena="tts-ja", a="k1", b="k2"),
    _row("unknown", "2025-06-04T12:00:03Z", "m1", "m9"),
    _row("bad-1", "2025-06-05T00:00:00Z", arena=None),
    _row("", "2025-06-05T00:00:00Z"),
    _row("bad-3", "2025-06-05T00:00:00Z", schema_version=9),
    _row("bad-4", "2025-06-05T00:00:00Z", vote="x"),
    _row("bad-5", "2025-06-05T00:00:00Z", voter_kind="robot"),
    _row("bad-6", "2025-06-05T00:00:00Z", "m1", "m1"),
    _row("bad-7", "2025-02-30T00:00:00Z"),
    _row("bad-8", "2025-06-05 00:00:00Z"),
    _row("bad-9", "2025-06-05T00:00:00"),
    _row("bad-10", "2025-06-05T24:00:00Z"),
    _row("bad-11", "2025-06-05T00:00:00.1234567Z"),
    _row("bad-12", "2025-06-05T00:00:00Z\n"),
    _row("bad-13", "0001-01-01T00:30:00+01:00"),  # year 0 in UTC
    _row("future", "2026-01-01T00:20:00Z"),  # beyond the reader's clock and its slack
    _row("dup-same", "2025-06-06T00:00:00Z", vote="a"),
    _row("dup-later", "2025-06-06T00:00:01Z", vote="a"),
    _row("dup-later", "2025-06-06T00:00:00Z", vote="b"),  # earlier: this one is kept
    _row("dup-invalid", "2025-06-06T01:00:00Z", vote="bogus"),  # invalid: the next one counts
]
#: The second file (later in order): duplicates decided by file order, and the valid twin.
SECOND = [
    _row("dup-same", "2025-06-06T00:00:00Z", vote="b"),  # same time: the first file's wins
    _row("dup-invalid", "2025-07-06T01:00:00Z", vote="tie"),
    _row("ok-6", "2025-07-01T00:00:00Z", "m3", "m2"),
]

#: The fourth file, written without a schema (its empty columns typed null by pyarrow).
UNTYPED = [
    _row("untyped-1", "2025-07-02T00:00:00Z", "m2", "m3", category=None),
    _row("untyped-2", "2025-07-02T00:00:01Z", "m3", "m1", "tie", category=None),
]

#: The fifth file, as pandas writes it back (integer columns as float64); a sixth, the same
#: with one fraction in ``schema_version``, is refused whole.
FLOATS = [
    _row("float-1", "2025-07-03T00:00:00Z", "m1", "m3"),
    _row("float-2", "2025-07-03T00:00:01Z", "m2", "m1", "b"),
]


def damaged_log(folder: Path) -> Path:
    """Write the log under ``folder`` and return it."""
    hand = folder / "hand"
    hand.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(FIRST, schema=_SCHEMA), hand / "a.parquet")
    second = pa.Table.from_pylist(SECOND, schema=_SCHEMA).drop_columns(["voter", "judge"])
    pq.write_table(second, hand / "b.parquet")
    mistyped = pa.table({"vote_id": pa.array([1, 2]), "ts": ["2025-06-01T00:00:00Z"] * 2})
    pq.write_table(mistyped, hand / "c.parquet")
    # Written without a schema, as pandas or pyarrow users write: category, voter and judge
    # are null in every row, flags [] in every row, so pyarrow types them null and list<null>.
    untyped = pa.Table.from_pylist(UNTYPED)
    assert pa.types.is_null(untyped.schema.field("category").type)
    pq.write_table(untyped, hand / "d.parquet")
    # As pandas saves a published file it read: integer columns holding a null come back as
    # float64 (read: whole values), and a float with a fraction in one (refused whole).
    floats = pa.Table.from_pylist(FLOATS, schema=_SCHEMA)
    floats = floats.set_column(0, "schema_version", floats.column(0).cast(pa.float64()))
    floats = floats.append_column("session_id", pa.array(["s1", None]))
    floats = floats.append_column("session_order", pa.array([2.0, None], pa.float64()))
    pq.write_table(floats, hand / "e.parquet")
    pq.write_table(floats.set_column(0, "schema_version", pa.array([3.0, 3.5])), hand / "f.parquet")
    generate(SynthSpec(votes=6000, months=3, models=5, voters=120, campaigners=2, seed=3,
                       start="2025-03"), folder / "synthetic")  # fmt: skip
    return folder


def _invalid_text(good: list, bad: bytes) -> pa.Array:
    """A string column whose last value is ``bad`` (bytes that are not UTF-8)."""
    return pa.array([v.encode() for v in good] + [bad], pa.binary()).view(pa.string())


#: The hostile files of :func:`hostile_log` that every engine refuses whole, by name.
REFUSED = ("b-category-not-utf8", "c-prompt-not-utf8", "d-version-above-int64",
           "f-lufs-beyond-double", "g-vote-twice", "h-unused-dictionary-value",
           "i-order-above-int64")  # fmt: skip


def hostile_log(folder: Path) -> Path:
    """Parquet files another writer (or an attacker) could publish, each refused whole by
    every engine for a value in one contract column, whether a reader asks for that column
    or not; and one, ``e``, with an unsigned ``schema_version`` that every engine reads."""
    folder.mkdir(parents=True)
    good = [_row(f"ok-{k}", f"2025-06-01T10:00:0{k}Z", "m1", "m2", "ab"[k % 2]) for k in range(4)]
    pq.write_table(pa.Table.from_pylist(good, schema=_SCHEMA), folder / "a-good.parquet")

    def other(tag: str) -> pa.Table:
        rows = [{**r, "vote_id": f"{tag}-{k}", "model_a": "m2", "model_b": "m3"}
                for k, r in enumerate(good)]  # fmt: skip
        return pa.Table.from_pylist(rows, schema=_SCHEMA)

    def write(name: str, table: pa.Table) -> None:
        pq.write_table(table, folder / f"{name}.parquet")

    t = other("b")
    write(REFUSED[0], t.set_column(7, "category", _invalid_text(["en"] * 3, b"\xff")))
    write(REFUSED[1], other("c").append_column("prompt", _invalid_text(["hi"] * 3, b"caf\xe9")))
    unsigned = pa.array([4, 4, 4, 2**64 - 1], pa.uint64())
    write(REFUSED[2], other("d").set_column(0, "schema_version", unsigned))
    write(
        "e-version-unsigned",
        other("e").set_column(0, "schema_version", pa.array([4] * 4, pa.uint64())),
    )
    lufs = pa.array([-23, -23, -23, 2**53 + 1], pa.int64())
    write(REFUSED[3], other("f").append_column("model_a_lufs", lufs))
    write(REFUSED[4], other("g").append_column("vote", pa.array(["b"] * 4)))
    unused = pa.DictionaryArray.from_arrays(
        pa.array([0, 0, 0, 0], pa.int32()), _invalid_text(["en"], b"\xff")
    )
    write(REFUSED[5], other("h").set_column(7, "category", unused))
    order = pa.array([1, 2, 3, 2**64 - 1], pa.uint64())
    write(
        REFUSED[6],
        other("i")
        .append_column("session_id", pa.array(["s"] * 4))
        .append_column("session_order", order),
    )
    return folder
