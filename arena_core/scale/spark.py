"""The Spark engine: the same counts table, computed by a cluster (or Spark's local mode).

The rows are judged by the SQL of :mod:`~arena_core.scale.rules` (the reader's
rules), duplicates of a ``vote_id`` keep the first valid row in replay order
(time, ``vote_id``, file order, row in file: ``_metadata.row_index``), and the
anomalous-voter test is decided as the DuckDB engine decides it
(:mod:`~arena_core.scale.flags`: settled by one aggregate when no voter reached
its first checkpoint, else the voters' votes and their window counts stream to the driver by
voter, a partition at a time). Only the small counts table comes back to the driver otherwise.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
import time
from collections import Counter
from collections.abc import Iterator
from urllib.parse import unquote, urlparse

import pyarrow as pa

from arena_core.integrity.anomaly import AnomalyParams
from arena_core.scale.contract import COUNTS_SCHEMA, GROUP_COLUMNS, conform
from arena_core.scale.flags import check_size, flagged_in_batches, votes_to_test_sql
from arena_core.scale.rules import (
    HUMAN_SQL,
    READ_COLUMNS,
    SPARK,
    flagged_sql,
    reason_sql,
    ts_us_sql,
)
from arena_core.scale.sources import (
    EMPTY,
    FLOATING,
    UNSIGNED,
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

#: Spark settings of a session this module starts: UTC, no web UI, few shuffle partitions
#: (the counts are small; a cluster's own session keeps its settings).
SESSION_CONFIG = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.ansi.enabled": "true",
}
_TYPES = {"schema_version": "BIGINT", "flags": "ARRAY<STRING>"}
#: The type Spark reads a column of each odd kind (:func:`~arena_core.scale.sources.odd_columns`) as.
_AS_READ = {FLOATING: "DOUBLE", UNSIGNED: "DECIMAL(20,0)"}
#: The end of a folder's pattern (:func:`~arena_core.scale.sources.remote_pattern`).
_EVERY_PARQUET = "/**/*.parquet"
#: Rows per Arrow batch of the anomalous-voter test's votes on the driver.
FLAG_BATCH_ROWS = 1 << 18
#: The columns of :func:`~arena_core.scale.flags.votes_to_test_sql`, as the driver batches them.
_TESTED = pa.schema([("voter", pa.string()), ("ts_us", pa.int64()), ("outcome", pa.int64()),
                     ("eligible", pa.bool_()), ("pair", pa.string()),
                     ("pair_before", pa.decimal128(38, 0))])  # fmt: skip


def session(master: str | None = None):
    """The active Spark session, or a new one (``master``, default ``local[*]``)."""
    from pyspark.sql import SparkSession  # imported here: the package runs without pyspark

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    builder = SparkSession.builder.appName("arena-counts").master(master or "local[*]")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # pyspark's PySparkRuntimeError when the JVM exits (a bad master)
        raise ValueError(f"could not start Spark with master {master or 'local[*]'!r}: "
                         f"{type(exc).__name__}: {exc}") from None  # fmt: skip


def _normal(path: str) -> str:
    """A file's path as Spark reports it, or as we list it, in one form (local: plain path)."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else path
    return path


def _ordered_files(spark, sources: Sources) -> list[str]:
    """Every file, in read_votes' order: local files as listed, patterns as Spark expands them."""
    files: list[str] = []
    for text, pattern in sources.items:
        if not pattern:
            files.append(text)
            continue
        reader = spark.read
        if text.endswith(_EVERY_PARQUET):  # Hadoop's globs have no "**": list the folder's tree
            reader = reader.option("recursiveFileLookup", "true").option("pathGlobFilter",
                                                                        "*.parquet")  # fmt: skip
            text = text.removesuffix(_EVERY_PARQUET)
        found = reader.parquet(text).inputFiles()
        files.extend(_normal(f) for f in file_order(found))
    return files


def counts_with_spark(sources: Sources, *, now_us: int | None = None, master: str | None = None,
                      spark=None, anomaly: AnomalyParams | None = None) -> pa.Table:  # fmt: skip
    """The counts table (:mod:`~arena_core.scale.contract`) of ``sources``, computed by Spark."""
    spark = spark if spark is not None else session(master)
    hub = [p for p in sources.patterns if p.startswith("hf://")]
    if hub:
        raise SourceError(f"{hub[0]}: Spark has no Hadoop file system for hf:// paths; download "
                          "the dataset (hf download --repo-type dataset <repo>) and pass the "
                          "folder, or use --engine duckdb, which reads hf:// itself")  # fmt: skip
    now_us = time.time_ns() // 1000 if now_us is None else now_us
    skipped: Counter = Counter()
    files = _ordered_files(spark, sources)
    groups = _checked_files(files, skipped)
    if not groups:
        return conform(COUNTS_SCHEMA.empty_table(), +skipped)
    checked = _views(spark, files, groups, now_us + FUTURE_SLACK_US)
    for reason, repeated, n in spark.sql("""SELECT reason, coalesce(keep_rank > 1, false), count(*)
            FROM checked WHERE reason IS NOT NULL OR keep_rank > 1 GROUP BY 1, 2""").collect():
        skipped[DUPLICATE if repeated else reason] += n
    voters = flagged_voters(spark, anomaly if anomaly is not None else AnomalyParams())
    spark.createDataFrame([(v,) for v in voters], "voter STRING").createOrReplaceTempView(
        "flagged_voters"
    )
    groups = ", ".join(GROUP_COLUMNS[:8])
    table = spark.sql(f"""SELECT {groups},
            {HUMAN_SQL} AND voter IS NOT NULL AND voter IN (SELECT voter FROM flagged_voters)
                AS anomalous,
            count(*) AS votes, min(ts_us) AS first_ts_us, max(ts_us) AS last_ts_us
        FROM valid GROUP BY {groups}, anomalous""").toArrow()  # noqa: S608
    checked.unpersist()
    return conform(table, +skipped)


def _checked_files(files: list[str], skipped: Counter) -> dict[tuple, list[str]]:
    """The files Spark may read, grouped by the contract columns each holds no value in, or
    holds as floats where the contract has integers (:func:`~arena_core.scale.sources.odd_columns`).

    A local file is checked as ``read_votes`` checks it (a mistyped contract column
    refuses it whole, counted in ``skipped``); Spark, reading with the contract's types,
    would stop the whole job on it. Remote files are not read twice: a mistyped one stops
    the job with Spark's error.
    """
    groups: dict[tuple, list[str]] = {}
    for path in files:
        odd = () if is_remote(path) else odd_columns(path, READ_COLUMNS, skipped)
        if odd is not None and (is_remote(path) or has_columns(path)):  # no column: no row
            groups.setdefault(odd, []).append(path)
    return groups


def _read(spark, groups: dict[tuple, list[str]]):
    """The contract columns of every file, with ``file_path`` and ``row_index``: each group
    read with the contract's types for the columns it has values in, the empty ones added
    as typed nulls (Spark cannot read a Parquet null column as a string), the floating ones
    read as doubles and cast (Spark stops the job on a double read as a BIGINT; their
    values were checked whole), the unsigned 64-bit ones read as Spark reads them,
    ``DECIMAL(20,0)``, and cast (Spark stops the job on one read as a BIGINT; their values
    were checked below ``2**63``). Also each file's name as Spark writes it in
    ``file_path``, by our name (:func:`_normal`)."""
    from pyspark.sql import functions as F  # noqa: N812  (imported here: pyspark is optional)

    frames, names = [], {}
    for odd, paths in groups.items():
        kinds = dict(odd)
        schema = ", ".join(f"{c} {_AS_READ.get(kinds.get(c), _TYPES.get(c, 'STRING'))}"
                           for c in READ_COLUMNS if kinds.get(c) != EMPTY)  # fmt: skip
        df = spark.read.schema(schema).parquet(*(_literal(p) for p in paths))
        names.update((_normal(name), _spark_key(name)) for name in df.inputFiles())
        for name, kind in odd:
            value = F.lit(None) if kind == EMPTY else F.col(name)
            df = df.withColumn(name, value.cast(_TYPES.get(name, "STRING")))
        frames.append(df.select(*READ_COLUMNS, "_metadata.file_path", "_metadata.row_index"))
    return functools.reduce(lambda x, y: x.unionByName(y), frames), names


#: Hadoop's glob characters: a local file named with them is given escaped, as itself.
_HADOOP_GLOB = re.compile(r"([\\\[\]*?{}])")


def _literal(path: str) -> str:
    """A listed file as Spark must be given it: Hadoop reads every path as a glob, so a
    local folder named ``v[1]`` would match ``v1`` (or nothing) unless escaped."""
    return path if is_remote(path) else _HADOOP_GLOB.sub(r"\\\1", path)


def _spark_key(name: str) -> str:
    """A file as the ``raw`` view's join compares it (the SQL there does the same to
    ``file_path``): local files without the scheme, still percent-encoded as Spark
    writes them (``it's%20dir``), other files as they are."""
    return re.sub(r"^file:/+", "/", name) if name.startswith("file:") else name


def _views(spark, order: list[str], groups: dict[tuple, list[str]], latest_us: int):
    """``checked`` (every row, its reason and its rank among its ``vote_id``) and ``valid``.

    The files are read with the contract's schema (a column a file lacks reads as
    null; no pass over every footer to merge schemas: only local files' footers are read,
    by :func:`_checked_files`), and ``checked`` is kept
    (memory, then disk) for the few queries that follow.
    """
    frame, spark_names = _read(spark, groups)
    frame.createOrReplaceTempView("raw_files")
    kept = {f for paths in groups.values() for f in paths}
    files = [f for f in order if f in kept]  # read_votes' order, which ranks the rows
    ranks = [(spark_names.get(_normal(f), _normal(f)), k) for k, f in enumerate(files)]
    spark.createDataFrame(ranks, "path STRING, file_rank INT").createOrReplaceTempView("ranks")
    cols = ", ".join(READ_COLUMNS)
    local = "regexp_replace(file_path, '^file:/+', '/')"
    spark.sql(f"""CREATE OR REPLACE TEMP VIEW raw AS
        SELECT {cols}, r.file_rank, p.row_index AS row_no
        FROM raw_files p JOIN ranks r ON
            CASE WHEN p.file_path LIKE 'file:%' THEN {local} ELSE p.file_path END = r.path""")  # noqa: S608
    spark.sql(f"""CREATE OR REPLACE TEMP VIEW parsed AS
        SELECT *, {ts_us_sql(SPARK)} AS ts_us, {flagged_sql(SPARK)} AS flagged FROM raw""")  # noqa: S608
    spark.sql(f"""CREATE OR REPLACE TEMP VIEW checked_rows AS
        SELECT *, CASE WHEN reason IS NULL THEN row_number() OVER (
            PARTITION BY vote_id, reason IS NULL ORDER BY ts_us, file_rank, row_no) END AS keep_rank
        FROM (SELECT *, {reason_sql(latest_us)} AS reason FROM parsed)""")  # noqa: S608
    checked = spark.table("checked_rows").persist()
    checked.createOrReplaceTempView("checked")
    spark.sql("CREATE OR REPLACE TEMP VIEW valid AS SELECT * FROM checked WHERE keep_rank = 1")
    return checked


def flagged_voters(spark, params: AnomalyParams, batch_rows: int = FLAG_BATCH_ROWS) -> list[str]:
    """The voters the anomalous-voter test flags (see :mod:`~arena_core.scale.flags`), from
    the ``valid`` view :func:`counts_with_spark` defines.

    Spark works out the window counts and sorts the votes that have a voter by voter; the driver
    takes them partition by partition (``toLocalIterator``, the next one fetched while
    this one is tested), in Arrow batches of ``batch_rows``: it holds about two
    partitions of rows, never the whole log.
    """
    first = int(params.checks[0])
    repeat, rows = spark.sql(f"""SELECT count_if(voter IS NOT NULL AND n >= {first}),
            coalesce(sum(n), 0)
        FROM (SELECT voter, count(*) AS n FROM valid WHERE {HUMAN_SQL} GROUP BY voter)""").first()  # noqa: S608
    if not repeat:
        return []
    check_size(rows)
    tested = spark.sql(votes_to_test_sql("valid", params)).toLocalIterator(prefetchPartitions=True)
    return sorted(flagged_in_batches(_arrow_batches(tested, batch_rows), params))


def _arrow_batches(rows: Iterator, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Spark's rows of :func:`~arena_core.scale.flags.votes_to_test_sql`, ``batch_rows`` at a
    time, as Arrow record batches (the packed counts as a 128-bit decimal)."""
    while chunk := list(itertools.islice(rows, batch_rows)):
        yield pa.RecordBatch.from_arrays(
            [pa.array(column, type=kind) for column, kind in
             zip(zip(*chunk, strict=True), _TESTED.types, strict=True)],
            schema=_TESTED,
        )  # fmt: skip


__all__ = ["counts_with_spark", "flagged_voters", "session"]
