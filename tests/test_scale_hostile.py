"""Hostile Parquet files: DuckDB skips and counts the files the in-process reader refuses.

Each file of ``scale_logs.hostile_log`` breaks the contract in one column (text that is
not UTF-8, a number its contract type cannot hold, a column held twice): before, DuckDB
stopped on some (a traceback), read others that the reader refused (another board), and
skipped one row of a file the reader refused whole.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from scale_logs import NOW_US, REFUSED, hostile_log

from arena_core.cli import main
from arena_core.scale import duck
from arena_core.scale.commands import make_counts
from arena_core.scale.contract import skipped_of
from arena_core.snapshots.source import board_part


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return hostile_log(tmp_path_factory.mktemp("hostile") / "votes")


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names])


def test_duckdb_counts_and_skips_what_the_reader_counts_and_skips(log_dir):
    reference = make_counts("python", [str(log_dir)], now_us=NOW_US)
    counted = make_counts("duckdb", [str(log_dir)], now_us=NOW_US)
    assert _sorted(counted).equals(_sorted(reference))
    assert (
        dict(skipped_of(counted))
        == dict(skipped_of(reference))
        == {"unreadable_file": len(REFUSED)}
    )
    assert sum(counted.column("votes").to_pylist()) == 8  # the good file, the unsigned one


def _board(capsys, *args) -> dict:
    assert main(["leaderboard", "--arena", "tts-en", "--format", "json",
                 "--read-at", "2026-01-01T00:00:00Z", *args]) == 0  # fmt: skip
    return board_part(json.loads(capsys.readouterr().out))


def test_the_duckdb_board_is_the_in_process_board(log_dir, capsys):
    reference = _board(capsys, "--votes", str(log_dir), "--engine", "python")
    assert _board(capsys, "--votes", str(log_dir), "--engine", "duckdb") == reference
    assert reference["skipped"] == {"unreadable_file": len(REFUSED)}


def test_duckdb_errors_of_the_board_path_are_reported_not_raised(tmp_path, capsys, monkeypatch):
    import duckdb

    hostile_log(tmp_path / "votes")
    for name in REFUSED:  # only good files: the error comes from DuckDB itself
        (tmp_path / "votes" / f"{name}.parquet").unlink()

    def broken(self):
        raise duckdb.InvalidInputException("a file went away")

    monkeypatch.setattr(duck.DuckVotes, "counts", broken)
    code = main(["leaderboard", "--arena", "tts-en", "--votes", str(tmp_path / "votes"),
                 "--engine", "duckdb"])  # fmt: skip
    assert code == 2
    assert "DuckDB could not read the votes: a file went away" in capsys.readouterr().err
