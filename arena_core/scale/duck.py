"""The DuckDB engine: counts straight from Parquet, and the Elo stream month by month.

DuckDB runs in-process, reads Parquet (local, globs, ``hf://`` and ``s3://``
through its httpfs extension) column by column and aggregates beyond memory by
spilling to disk, so a log of a hundred million votes becomes its counts table
in bounded memory. The rows are judged with the reader's rules
(:mod:`~arena_core.scale.rules`), duplicates of a ``vote_id`` keep the first
row in replay order (time, then ``vote_id``, then file and row order, as
``read_votes``), and the anomalous-voter test is the same function the board
runs (see :meth:`DuckVotes.flagged_voters`).

Deduplication without holding every id: one pass hashes every ``vote_id`` and
keeps the hashes seen more than once (a few, in a real log); only rows with
those hashes are ranked exactly, and the rows that lose are remembered by file
and row number.

The SQL is assembled from this package's constants and rules; values from the
command line travel as query parameters, and file names as escaped literals
(``# noqa: S608`` marks those statements).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from arena_core.integrity.anomaly import AnomalyParams
from arena_core.scale.board import BoardQuery
from arena_core.scale.connection import EngineError, connect, load_remote
from arena_core.scale.contract import COUNTS_SCHEMA, GROUP_COLUMNS, conform
from arena_core.scale.flags import check_size, flagged_in_batches, votes_to_test_sql
from arena_core.scale.manifest import Trusted, trusted_files
from arena_core.scale.months import month_windows, prefilter
from arena_core.scale.rules import (
    DUCKDB,
    HUMAN_SQL,
    READ_COLUMNS,
    SQL_TYPES,
    flagged_sql,
    reason_sql,
    ts_us_sql,
)
from arena_core.scale.sources import (
    SourceError,
    Sources,
    file_order,
    has_columns,
    is_remote,
    odd_columns,
)
from arena_core.votes.clean import FUTURE_SLACK_US
from arena_core.votes.reasons import DUPLICATE

log = logging.getLogger(__name__)

#: Rows per record batch of the Elo stream.
STREAM_ROWS = 1 << 20
#: Most rows per record batch of the anomalous-voter test's votes (DuckDB 2.0 hands out
#: batches of 122,880 rows, its vector group, even when asked for more).
FLAG_BATCH_ROWS = 1 << 20


class DuckVotes:
    """One vote log opened in DuckDB: :meth:`counts`, :meth:`stream` and the test's flags."""

    def __init__(self, sources: Sources, *, now_us: int | None = None, con=None,
                 anomaly: AnomalyParams | None = None, trust_manifest: bool = True):  # fmt: skip
        self.con = con if con is not None else connect()
        self.anomaly = anomaly if anomaly is not None else AnomalyParams()
        self.skipped: Counter = Counter()
        now_us = time.time_ns() // 1000 if now_us is None else now_us
        self.files = self._files(sources)
        latest_us = now_us + FUTURE_SLACK_US
        #: The files a compaction manifest vouches for (:mod:`~arena_core.scale.manifest`).
        self.trusted = trusted_files(self.files, latest_us) if trust_manifest else Trusted()
        #: Whether the ``flagged_voters`` table is made (:meth:`_make_flags`, on first need).
        self._flags_made = False
        log.info("%d of %d vote files vouched for by a compaction manifest",
                 len(self.trusted.ranks), len(self.files))  # fmt: skip
        self._views(latest_us)

    # -- opening ---------------------------------------------------------------------

    def _files(self, sources: Sources) -> list[str]:
        if sources.remote:
            load_remote(self.con)
        files = []
        for text, pattern in sources.items:
            if pattern:
                found = [
                    r[0] for r in self.con.execute("SELECT file FROM glob(?)", [text]).fetchall()
                ]
                found = [f for f in file_order(found) if f.endswith(".parquet")]
                # A local glob's files are checked like a folder's; remote ones are not read
                # twice: a mistyped column there stops DuckDB with its error (EngineError).
                files.extend(f for f in found if is_remote(f) or self._schema_ok(f))
            elif self._schema_ok(text):
                files.append(text)
        return files

    def _schema_ok(self, path: str) -> bool:
        """Refuse a local file whose contract column has another type, as read_votes does
        (DuckDB reads a column of Arrow's null type as nulls itself); leave out one without
        a column (no row: see :func:`has_columns`)."""
        return odd_columns(path, READ_COLUMNS, self.skipped) is not None and has_columns(path)

    def _views(self, latest_us: int) -> None:
        """``raw`` (the files, in order), ``checked`` (each row's reason), ``valid``; then the
        duplicates to drop, in one pass (the flagged voters when first needed: ``_make_flags``)."""
        con = self.con
        ranks = range(len(self.files))
        con.execute(f"CREATE OR REPLACE TEMP VIEW raw AS {self._rows(ranks)}")
        judged = _judged(latest_us)
        con.execute(f"CREATE OR REPLACE TEMP VIEW checked AS {judged('raw')}")
        if self.trusted:
            others = [r for r in ranks if r not in set(self.trusted.ranks)]
            con.execute(f"CREATE OR REPLACE TEMP VIEW raw_t AS {self._rows(self.trusted.ranks)}")
            con.execute(f"CREATE OR REPLACE TEMP VIEW raw_u AS {self._rows(others)}")
            con.execute(f"CREATE OR REPLACE TEMP VIEW checked_u AS {judged('raw_u')}")
            self._dedup_trusted(judged)
        else:
            self._dedup(judged)
        rows = "checked"
        if self.trusted:  # the trusted rows are valid: their time is parsed, never matched
            rows = f"""(SELECT *, epoch_us(try_cast(ts AS TIMESTAMPTZ)) AS ts_us,
                    {flagged_sql(DUCKDB)} AS flagged, NULL::VARCHAR AS reason FROM raw_t
                UNION ALL BY NAME SELECT * FROM checked_u)"""  # noqa: S608
        con.execute(f"""CREATE OR REPLACE TEMP VIEW valid AS
            SELECT c.* FROM {rows} c ANTI JOIN dropped d
                ON c.file_rank = d.file_rank AND c.row_no = d.row_no
            WHERE c.reason IS NULL""")  # noqa: S608

    def _make_flags(self) -> None:
        """The table ``flagged_voters``, made the first time a result needs it: building a
        compaction manifest opens the log for its valid rows and duplicates only, and at
        100M votes with repeat voters the test takes about 20 minutes."""
        if self._flags_made:
            return
        self.con.execute("CREATE OR REPLACE TEMP TABLE flagged_voters (voter VARCHAR)")
        voters = self.flagged_voters()
        if voters:
            self.con.executemany("INSERT INTO flagged_voters VALUES (?)", [[v] for v in voters])
        self._flags_made = True

    def _rows(self, ranks) -> str:
        """SELECT of the contract columns of the files at ``ranks``, with ``file_rank`` (the
        file's place in :attr:`files`: read_votes' order) and ``row_no``."""
        ranks = list(ranks)
        if not ranks:  # no file: the same columns, no rows
            cols = ", ".join(
                f"CAST(NULL AS {SQL_TYPES.get(c, 'VARCHAR')}) AS {c}" for c in READ_COLUMNS
            )
            return f"SELECT {cols}, 0 AS file_rank, CAST(0 AS BIGINT) AS row_no WHERE false"
        listed = ", ".join("'" + self.files[r].replace("'", "''") + "'" for r in ranks)
        source = f"read_parquet([{listed}], file_row_number=true, union_by_name=true)"
        have = {r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}  # noqa: S608
        cols = ", ".join(c if c in have else f"CAST(NULL AS {SQL_TYPES.get(c, 'VARCHAR')}) AS {c}"
                         for c in READ_COLUMNS)  # fmt: skip
        rank = (
            "file_index" if ranks == list(range(len(ranks))) else f"{ranks}[file_index::BIGINT + 1]"
        )
        return f"SELECT {cols}, {rank} AS file_rank, file_row_number AS row_no FROM {source}"  # noqa: S608

    def _dedup(self, judged) -> None:
        """The valid rows that repeat an earlier ``vote_id`` (by file and row number).

        One pass hashes every id (no row is judged for it); only the rows whose hash
        is repeated are judged and ranked.
        """
        con = self.con
        con.execute("""CREATE OR REPLACE TEMP TABLE dup_hashes AS
            SELECT hash(vote_id) AS h FROM raw GROUP BY h HAVING count(*) > 1""")
        repeated = "(SELECT r.* FROM raw r SEMI JOIN dup_hashes d ON hash(r.vote_id) = d.h)"
        self._drop_repeats(judged(repeated))
        self.skipped[DUPLICATE] += con.execute("SELECT count(*) FROM dropped").fetchall()[0][0]

    def _drop_repeats(self, candidates: str) -> None:
        """``dropped``: the valid rows among ``candidates`` (judged rows, SQL) that repeat an
        earlier ``vote_id`` in replay order (time, then file and row order)."""
        self.con.execute(f"""CREATE OR REPLACE TEMP TABLE dropped AS
            SELECT file_rank, row_no, vote_id FROM (
                SELECT file_rank, row_no, vote_id, row_number() OVER (
                    PARTITION BY vote_id ORDER BY ts_us, file_rank, row_no) AS k
                FROM ({candidates}) WHERE reason IS NULL)
            WHERE k > 1""")  # noqa: S608

    def _dedup_trusted(self, judged) -> None:
        """:meth:`_dedup` when a manifest vouches for some files (its duplicate groups stand
        in for hashing their ids): the other files' ids are hashed, looked up in the trusted
        files, and every row sharing a repeated one is ranked exactly, as in :meth:`_dedup`;
        the manifest's groups of the other ids decide the rest."""
        con = self.con
        con.execute("""CREATE OR REPLACE TEMP TABLE u_hashes AS
            SELECT hash(vote_id) AS h, count(*) AS n FROM raw_u GROUP BY h""")
        hits = "raw_t t SEMI JOIN u_hashes u ON hash(t.vote_id) = u.h"
        if not con.execute("SELECT count(*) FROM u_hashes").fetchall()[0][0]:
            hits = "raw_t WHERE false"  # nothing else was read: no lookup in the trusted files
        con.execute(f"CREATE OR REPLACE TEMP TABLE t_hits AS SELECT * FROM {hits}")  # noqa: S608
        con.execute("""CREATE OR REPLACE TEMP TABLE dup_hashes AS
            SELECT h FROM u_hashes WHERE n > 1 UNION SELECT hash(vote_id) FROM t_hits""")
        self._drop_repeats(
            judged("""(SELECT r.* FROM raw_u r SEMI JOIN dup_hashes d
            ON hash(r.vote_id) = d.h UNION ALL SELECT * FROM t_hits)""")
        )
        ranked = {r[0] for r in con.execute("SELECT DISTINCT vote_id FROM t_hits").fetchall()}
        losers = [[rank, row] for vote_id, members in self.trusted.groups if vote_id not in ranked
                  for _, rank, row in sorted((ts, rank, row) for rank, row, ts in members)[1:]]  # fmt: skip
        if losers:  # one Arrow insert: executemany goes row by row (100 s at 100k rows)
            ranks, rows = zip(*losers, strict=True)
            extra = pa.table({"file_rank": pa.array(ranks, pa.int64()),
                              "row_no": pa.array(rows, pa.int64())})  # fmt: skip
            con.register("manifest_losers", extra)
            con.execute("INSERT INTO dropped SELECT file_rank, row_no, NULL FROM manifest_losers")
            con.unregister("manifest_losers")
        self.skipped[DUPLICATE] += con.execute("SELECT count(*) FROM dropped").fetchall()[0][0]

    # -- the anomalous-voter test ----------------------------------------------------

    def flagged_voters(self, batch_rows: int = FLAG_BATCH_ROWS) -> list[str]:
        """The voters the anomalous-voter test flags, as ``select_votes`` finds them.

        Only a voter with at least the first checkpoint's number of human votes can
        be flagged. A first pass reads the ``voter`` column alone: when no voter has
        that many rows at all (or the log has no voters), no one can be flagged. Otherwise
        DuckDB works out each human vote's counts of all voters' earlier votes on its pair
        (a window function, spilling beyond its memory limit) and streams the votes that
        have a voter, by voter, in batches of ``batch_rows`` to the test's own numerics,
        which take the voter's own votes out (:mod:`~arena_core.scale.flags`); a voter
        below the first checkpoint never reaches one there.
        """
        first = int(self.anomaly.checks[0])
        repeat, rows = self.con.execute(f"""SELECT
                count(*) FILTER (WHERE voter IS NOT NULL AND n >= {first}), coalesce(sum(n), 0)
            FROM (SELECT voter, count(*) AS n FROM raw GROUP BY voter)""").fetchall()[0]  # noqa: S608
        if not repeat:
            return []
        check_size(rows)  # every row, an upper bound of the human votes
        reader = self.con.sql(votes_to_test_sql("valid", self.anomaly)).to_arrow_reader(batch_rows)
        return sorted(flagged_in_batches(reader, self.anomaly))

    # -- results ---------------------------------------------------------------------

    def counts(self) -> pa.Table:
        """The counts table of the log (:mod:`~arena_core.scale.contract`), and the rows skipped
        by reason, in one pass over the votes."""
        self._make_flags()
        dims = ", ".join(f"CASE WHEN reason IS NULL THEN {c} END AS {c}" for c in GROUP_COLUMNS[:8])
        anomalous = (
            f"{HUMAN_SQL} AND voter IS NOT NULL AND voter IN (SELECT voter FROM flagged_voters)"  # noqa: S608
        )
        checked = "checked_u" if self.trusted else "checked"
        sql = f"""SELECT reason, {dims}, reason IS NULL AND {anomalous} AS anomalous,
                count(*) AS votes, min(ts_us) AS first_ts_us, max(ts_us) AS last_ts_us
            FROM {checked} c ANTI JOIN dropped d ON c.file_rank = d.file_rank AND c.row_no = d.row_no
            GROUP BY ALL"""  # noqa: S608
        if self.trusted:
            sql = f"""SELECT reason, {", ".join(GROUP_COLUMNS[:8])}, anomalous, sum(votes)::BIGINT
                    AS votes, min(first_ts_us) AS first_ts_us, max(last_ts_us) AS last_ts_us
                FROM ({sql} UNION ALL {self._trusted_counts(anomalous)}) GROUP BY ALL"""  # noqa: S608
        table = self.con.sql(sql + " ORDER BY ALL").to_arrow_table()
        valid = pc.is_null(table.column("reason"))
        skipped = Counter(self.skipped)
        bad = table.filter(pc.invert(valid))
        for reason, n in zip(bad.column("reason").to_pylist(), bad.column("votes").to_pylist(),
                             strict=True):  # fmt: skip
            skipped[reason] += n
        return conform(table.filter(valid).drop_columns(["reason"]), +skipped)

    def _trusted_counts(self, anomalous: str) -> str:
        """The counts query of the trusted files: every row is valid, so none is judged, and
        when their timestamps are UTC of one length, a group's first and last are its
        least and greatest text (parsed once per group, not once per row)."""
        parse = "epoch_us(try_cast({} AS TIMESTAMPTZ))"
        if self.trusted.ts_width is not None:
            first, last = parse.format("min(ts)"), parse.format("max(ts)")
        else:
            first, last = f"min({parse.format('ts')})", f"max({parse.format('ts')})"
        return f"""SELECT NULL::VARCHAR AS reason, {", ".join(GROUP_COLUMNS[:7])},
                {flagged_sql(DUCKDB)} AS flagged, {anomalous} AS anomalous, count(*) AS votes,
                {first} AS first_ts_us, {last} AS last_ts_us
            FROM raw_t c ANTI JOIN dropped d ON c.file_rank = d.file_rank AND c.row_no = d.row_no
            GROUP BY ALL"""  # noqa: S608

    def stream(self, query: BoardQuery, first_us: int, last_us: int) -> Iterator[pa.RecordBatch]:
        """The board's votes in replay order, one calendar month at a time (bounded memory)."""
        where, params = _selection(query)
        with engine_errors():  # the stream is read after the counts: its errors come late
            self._make_flags()
            yield from self._months(where, params, first_us, last_us)

    def _months(self, where: str, params: list, first_us: int, last_us: int):
        """The board's votes month by month; after a month without one, the month of the
        board's next vote: one vote dated 0001-01-01 (a writer's ``datetime.min``) before the
        others cost a query per month, 24,000 of them (about six minutes)."""
        lo = first_us
        while lo is not None and lo <= last_us:
            lo, hi = month_windows(lo, lo)[0]
            empty = True
            for batch in self._dated("model_a, model_b, vote", where, params, lo, hi,
                                     "ORDER BY ts_us, vote_id"):  # fmt: skip
                empty = empty and not batch.num_rows
                yield batch
            if empty:
                lo = self._dated("min(ts_us)", where, params, hi, last_us + 1).read_all()[0][0]
                lo = lo.as_py()
            else:
                lo = hi

    def _dated(self, select: str, where: str, params: list, lo: int, hi: int, order: str = ""):
        """``select`` of the valid rows dated in ``[lo, hi)`` where ``where``, as an Arrow
        reader; a string comparison on ``ts`` first lets Parquet statistics prune row groups."""
        sql = f"""SELECT {select} FROM valid WHERE ts >= ? AND ts < ? AND ts_us >= ?
            AND ts_us < ? AND {where} {order}"""  # noqa: S608
        return self.con.sql(sql, params=[*prefilter(lo, hi), lo, hi, *params]).to_arrow_reader(
            STREAM_ROWS
        )


def _judged(latest_us: int):
    """A function from a row source (SQL) to its rows with ``ts_us``, ``flagged`` and ``reason``."""
    reason, ts_us, flagged = reason_sql(latest_us), ts_us_sql(DUCKDB), flagged_sql(DUCKDB)

    def judged(rows: str) -> str:
        inner = f"SELECT *, {ts_us} AS ts_us, {flagged} AS flagged FROM {rows}"  # noqa: S608
        return f"SELECT *, {reason} AS reason FROM ({inner})"  # noqa: S608

    return judged


def _selection(query: BoardQuery) -> tuple[str, list]:
    """The WHERE clause of a board's votes, with its parameters (the rules of select_counts)."""
    where, params = ["arena = ?"], [query.arena]
    if query.category is not None:
        where.append("category = ?")
        params.append(query.category)
    if query.voter_kind is not None:
        where.append("(voter_kind = ? OR (voter_kind IS NULL AND ? = 'human'))")
        params += [query.voter_kind, query.voter_kind]
    if query.judge is not None:
        where.append("judge = ?")
        params.append(query.judge)
    if not query.include_flagged:
        where.append(f"NOT flagged AND NOT ({HUMAN_SQL} AND voter IS NOT NULL AND "  # noqa: S608
                     "voter IN (SELECT voter FROM flagged_voters))")  # fmt: skip
    where.append("list_contains(?, model_a) AND list_contains(?, model_b)")
    params += [list(query.models), list(query.models)]
    return " AND ".join(where), params


def counts_with_duckdb(sources: Sources, *, now_us: int | None = None,
                       temp_dir: str | Path | None = None) -> pa.Table:  # fmt: skip
    """Open ``sources`` and return their counts table."""
    con = connect(str(temp_dir) if temp_dir else None)
    try:
        with engine_errors():
            return DuckVotes(sources, now_us=now_us, con=con).counts()
    finally:
        con.close()


@contextmanager
def engine_errors() -> Iterator[None]:
    """DuckDB's own errors (a corrupt file, a remote one it cannot read) raised inside as
    :class:`EngineError`, which the command line reports as an error, not a traceback."""
    try:
        yield
    except SourceError:
        raise
    except Exception as exc:  # duckdb.Error, without importing duckdb at module level
        if "duckdb" in type(exc).__module__:
            raise EngineError(f"DuckDB could not read the votes: {exc}") from exc
        raise


__all__ = ["COUNTS_SCHEMA", "DuckVotes", "EngineError", "counts_with_duckdb", "engine_errors",
           "month_windows"]  # fmt: skip
