"""The Spark counts job in Spark's local mode: the same counts and board as the in-process path.

scripts/test.sh installs Java (Debian's JRE) and sets ARENA_REQUIRE_JAVA=1, so
there a missing ``java`` fails the run instead of skipping it. One small
SparkSession serves the whole module: starting one takes most of its time.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest
from scale_logs import NOW_US, REFUSED, damaged_log, hostile_log

from arena_core.integrity.anomaly import AnomalyParams, detect
from arena_core.leaderboard import NO_VOTE_ORDER, board_from_votes
from arena_core.scale.board import board_from_counts
from arena_core.scale.duck import DuckVotes
from arena_core.scale.python_engine import counts_from_votes, read_for_counts
from arena_core.scale.sources import SourceError, resolve
from arena_core.scale.spark import counts_with_spark, flagged_voters

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    if os.environ.get("ARENA_REQUIRE_JAVA"):
        pytest.fail("java is not installed (scripts/test.sh installs Debian's JRE)", pytrace=False)
    pytest.skip("java is not installed (scripts/test.sh installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def spark():
    from arena_core.scale.spark import session

    spark = session("local[1]")
    # A few thousand rows: one task per stage beats eight (the cost is the JVM's warm-up).
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return damaged_log(tmp_path_factory.mktemp("votes"))


def _sorted(table):
    return table.sort_by([(name, "ascending") for name in table.column_names])


#: Settings under which honest voters are flagged too: each count moves some voter's result.
LENIENT = AnomalyParams(alpha=0.9, checks=(5, 6, 7, 8, 10, 12))


@pytest.mark.slow
def test_spark_flags_the_voters_duckdb_and_the_in_process_test_flag(spark, log_dir):
    """The 120 repeat voters of the log (two campaigners): Spark's driver takes the
    votes a partition at a time, in batches of 7 rows (voters split across batches)."""
    spark.conf.set("spark.sql.shuffle.partitions", "3")  # a voter's votes may span partitions
    votes = read_for_counts(log_dir, now_us=NOW_US)
    try:
        for params in (AnomalyParams(), LENIENT):
            expected = detect(votes, params, every_voter=False).flagged_voters
            counts_with_spark(resolve(log_dir), now_us=NOW_US, spark=spark, anomaly=params)
            got = flagged_voters(spark, params, batch_rows=7)
            duck = DuckVotes(resolve(log_dir), now_us=NOW_US, anomaly=params)
            assert got == duck.flagged_voters() == sorted(expected)
        assert len(expected) >= 10  # lenient: many voters flagged
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "1")


@pytest.mark.slow
def test_spark_counts_and_board_equal_the_in_process_ones(spark, log_dir):
    votes = read_for_counts(log_dir, now_us=NOW_US)
    reference = counts_from_votes(votes)
    # The mistyped file is refused whole, as the reader refuses it, and counted; the file
    # whose empty columns are typed null is read. A glob for the synthetic part (expanded and
    # ordered by Spark), a folder for the hand-made one.
    sources = resolve([log_dir / "hand", f"{log_dir}/synthetic/**/*.parquet"])
    counts = counts_with_spark(sources, now_us=NOW_US, spark=spark)
    assert _sorted(counts).equals(_sorted(reference))
    assert _skips(counts) == _skips(reference) and _skips(counts)["unreadable_file"] == 2
    duck = DuckVotes(resolve(log_dir), now_us=NOW_US)
    board = board_from_counts(counts, "tts-en", lambda q: duck.stream(q, 0, NOW_US))
    expected = board_from_votes(votes, "tts-en")
    assert board.rows == expected.rows
    assert board.votes_used == expected.votes_used
    # Spark's counts alone (the votes kept elsewhere): the same board but the Elo column.
    alone = board_from_counts(counts, "tts-en", None)
    assert alone.rows == tuple(replace(row, elo=None) for row in expected.rows)
    assert alone.warnings == (*expected.warnings, NO_VOTE_ORDER)


def _skips(table) -> dict:
    from arena_core.scale.contract import skipped_of

    return dict(skipped_of(table))


def test_spark_refuses_hub_paths_with_what_to_do(spark):
    with pytest.raises(SourceError, match="--engine duckdb"):
        counts_with_spark(resolve(["hf://datasets/org/votes"]), spark=spark)


@pytest.mark.slow
def test_spark_reads_folders_named_with_spaces_quotes_and_glob_characters(spark, log_dir, tmp_path):
    """Spark writes ``file_path`` percent-encoded (``it's%20dir``) and reads every path as
    a Hadoop glob (``v[1]`` matches ``v1``): such a folder once counted 0 votes, exit 0."""
    odd = tmp_path / "v[1] it's"
    shutil.copytree(log_dir, odd)
    reference = counts_from_votes(read_for_counts(log_dir, now_us=NOW_US))
    counts = counts_with_spark(resolve(odd), now_us=NOW_US, spark=spark)
    assert _sorted(counts).equals(_sorted(reference))
    assert _skips(counts) == _skips(reference)


@pytest.mark.slow
def test_spark_skips_and_counts_the_hostile_files_the_reader_refuses(spark, tmp_path):
    """Text that is not UTF-8 stopped Spark's job, and an unsigned ``schema_version``
    (values 4, read by the others) too: Spark reads and refuses what the reader does."""
    folder = hostile_log(tmp_path / "votes")
    reference = counts_from_votes(read_for_counts(folder, now_us=NOW_US))
    counts = counts_with_spark(resolve(folder), now_us=NOW_US, spark=spark)
    assert _sorted(counts).equals(_sorted(reference))
    assert _skips(counts) == _skips(reference) == {"unreadable_file": len(REFUSED)}
