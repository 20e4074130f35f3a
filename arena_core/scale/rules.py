"""The reader's row rules as SQL, for the engines that read Parquet themselves.

:func:`~arena_core.votes.clean.clean` skips a row for the first rule it breaks,
in this order: a required field missing or empty, an unsupported schema
version, a vote not in ``a|b|tie|both_bad``, an unknown voter kind, the same
model on both sides, a timestamp that is not ISO-8601 with a zone (or outside
years 1-9999 in UTC), a timestamp from the future. :func:`reason_sql` is that
chain as one SQL ``CASE``; DuckDB and Spark SQL share it, apart from the few
functions named in :class:`Dialect`. The tests run both engines and the Python
reader on the same damaged files.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena_core.votes.reasons import (
    BAD_TS,
    BAD_VOTE,
    BAD_VOTER_KIND,
    FUTURE_TS,
    MISSING,
    SAME_MODEL,
    VERSION,
)
from arena_core.votes.schema import (
    REQUIRED,
    SUPPORTED_VERSIONS,
    TS_MAX_US,
    TS_MIN_US,
    TS_PATTERN,
    VOTER_KINDS,
    VOTES,
)

#: The contract columns an engine reads (those a board needs, and those rows are judged on).
READ_COLUMNS = ("schema_version", "vote_id", "ts", "arena", "model_a", "model_b", "vote",
                "category", "voter", "voter_kind", "judge", "flags")  # fmt: skip
#: SQL type of each column, for a column no file has (read as all null).
SQL_TYPES = {"schema_version": "BIGINT", "flags": "VARCHAR[]"}


def literal(text: str) -> str:
    """A SQL string literal (single quotes doubled; backslashes as they are)."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class Dialect:
    """The functions that differ between engines."""

    #: ``{0}`` matches the regular expression ``{1}`` (a SQL string literal), anywhere.
    regex: str
    #: ``{0}`` (an accepted ISO-8601 string) as microseconds since the epoch, NULL if invalid.
    epoch_us: str
    #: Number of elements of the list ``{0}`` (NULL, or -1, for a NULL list).
    length: str
    #: :data:`~arena_core.votes.schema.TS_PATTERN` as a string literal of this engine.
    pattern: str


DUCKDB = Dialect(
    regex="regexp_matches({0}, {1})",
    epoch_us="epoch_us(try_cast({0} AS TIMESTAMPTZ))",
    length="len({0})",
    pattern=literal(TS_PATTERN),
)
SPARK = Dialect(
    regex="({0} RLIKE {1})",
    epoch_us="unix_micros(try_cast({0} AS TIMESTAMP))",
    length="size({0})",
    # Java's "$" also matches before a final newline, RE2's only at the end (Java's \z);
    # Spark's string literals take backslash escapes, so each backslash is doubled.
    pattern=literal(TS_PATTERN.removesuffix("$") + "\\z").replace("\\", "\\\\"),
)


def _in(column: str, values) -> str:
    return (
        f"{column} IN ({', '.join(literal(v) if isinstance(v, str) else str(v) for v in values)})"
    )


def ts_us_sql(dialect: Dialect, column: str = "ts") -> str:
    """The row's time in microseconds, NULL unless it is accepted (pattern, calendar, range)."""
    parsed = dialect.epoch_us.format(column)
    return (f"CASE WHEN {dialect.regex.format(column, dialect.pattern)} "
            f"AND {parsed} BETWEEN {TS_MIN_US} AND {TS_MAX_US} THEN {parsed} END")  # fmt: skip


def reason_sql(latest_us: int) -> str:
    """The reason a row is skipped (NULL: valid), given its ``ts_us`` column; rows dated
    after ``latest_us`` are from the future."""
    missing = " OR ".join(
        f"{name} IS NULL" + ("" if name == "schema_version" else f" OR {name} = ''")
        for name in REQUIRED
    )
    return f"""CASE
        WHEN {missing} THEN {literal(MISSING)}
        WHEN NOT {_in("schema_version", sorted(SUPPORTED_VERSIONS))} THEN {literal(VERSION)}
        WHEN NOT {_in("vote", VOTES)} THEN {literal(BAD_VOTE)}
        WHEN voter_kind IS NOT NULL AND NOT {_in("voter_kind", VOTER_KINDS)}
            THEN {literal(BAD_VOTER_KIND)}
        WHEN model_a = model_b THEN {literal(SAME_MODEL)}
        WHEN ts_us IS NULL THEN {literal(BAD_TS)}
        WHEN ts_us > {int(latest_us)} THEN {literal(FUTURE_TS)}
    END"""


HUMAN_SQL = "(voter_kind IS NULL OR voter_kind = 'human')"


def flagged_sql(dialect: Dialect) -> str:
    """Whether the row carries a flag (a NULL list carries none)."""
    return f"coalesce({dialect.length.format('flags')}, 0) > 0"
