"""Boards of logs too big for memory: a counts table plus a time-ordered vote stream.

Bradley-Terry needs only how often each pair's outcomes occurred; sequential
Elo needs the votes in order, one at a time. So a board can be computed from
a counts table (:mod:`~arena_core.scale.contract`) and a stream of votes
(:func:`~arena_core.scale.board.board_from_counts`), with the same numbers as
the in-process replay. The counts come from one of three engines, which apply
the same rules as :func:`~arena_core.votes.read.read_votes` and
:func:`~arena_core.selection.select_votes`:

* :mod:`~arena_core.scale.python_engine`: the in-process reader (the reference; JSONL too);
* :mod:`~arena_core.scale.duck`: DuckDB, straight from Parquet, in bounded memory (its
  connections, with their memory limit and spill folder, in :mod:`~arena_core.scale.connection`);
* :mod:`~arena_core.scale.spark`: Spark, for a cluster (tested in local mode).

Nothing here imports DuckDB or pyspark until an engine is used.
"""
