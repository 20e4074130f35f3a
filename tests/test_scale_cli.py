"""``counts`` and ``leaderboard --engine/--counts`` on the command line."""

from __future__ import annotations

import json

import pytest
from scale_logs import damaged_log

from arena_core.cli import main
from arena_core.leaderboard import NO_VOTE_ORDER
from arena_core.scale import commands
from arena_core.scale.contract import read_counts
from arena_core.snapshots.source import board_part


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    folder = damaged_log(tmp_path_factory.mktemp("votes"))
    (folder / "hand" / "c.parquet").unlink()  # the CLI test does not need the refused file
    return folder


def _board(capsys, *args) -> dict:
    """The board's own keys; its revision's count of votes is checked on the side (the
    counts path knows how many votes it counted, not which came last)."""
    assert main(["leaderboard", "--arena", "tts-en", "--format", "json", *args]) == 0
    document = json.loads(capsys.readouterr().out)
    VOTES_READ.add(document["revision"]["votes_read"])
    return board_part(document)


#: Every ``revision.votes_read`` the boards of one test printed: one value when the
#: engines agree on how many valid distinct votes they read.
VOTES_READ: set[int] = set()


@pytest.fixture(autouse=True)
def _one_count_of_votes():
    VOTES_READ.clear()
    yield
    assert len(VOTES_READ) <= 1, f"the engines read different numbers of votes: {VOTES_READ}"


def test_every_engine_prints_the_same_board(log_dir, tmp_path, capsys):
    votes = ["--votes", str(log_dir)]
    reference = _board(capsys, *votes, "--engine", "python")
    assert _board(capsys, *votes, "--engine", "duckdb") == reference
    out = tmp_path / "counts.parquet"
    assert main(["counts", "--engine", "duckdb", *votes, "--out", str(out)]) == 0
    assert "count rows" in capsys.readouterr().err
    assert read_counts(out).num_rows > 0
    assert _board(capsys, *votes, "--counts", str(out)) == reference


def test_auto_takes_duckdb_from_the_size_threshold(log_dir, monkeypatch, capsys):
    used = []
    real = commands.scaled_boards

    def spy(args, *rest):
        boards = real(args, *rest)
        used.append(boards is not None)
        return boards

    monkeypatch.setattr(commands, "scaled_boards", spy)
    small = _board(capsys, "--votes", str(log_dir))
    monkeypatch.setattr(commands, "AUTO_BYTES", 1)
    large = _board(capsys, "--votes", str(log_dir))
    assert used == [False, True]
    assert small == large


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--engine", "duckdb", "--since", "2025-06-01"], "--since"),
     (["--engine", "duckdb", "--half-life", "30"], "--half-life"),
     (["--counts", "missing.parquet", "--until", "2025-06-01"], "--until")],
)  # fmt: skip
def test_settings_the_counts_cannot_answer_are_refused(log_dir, capsys, extra, message):
    assert main(["leaderboard", "--votes", str(log_dir), *extra]) == 2
    assert message in capsys.readouterr().err


def test_auto_replays_in_process_what_the_counts_cannot_answer(log_dir, capsys, monkeypatch):
    monkeypatch.setattr(commands, "AUTO_BYTES", 1)
    board = _board(capsys, "--votes", str(log_dir), "--since", "2025-06-02")
    assert board["since"] == "2025-06-02T00:00:00.000000Z"


def test_a_missing_counts_file_is_named_as_missing(log_dir, tmp_path, capsys):
    missing = tmp_path / "counts.parquet"
    assert main(["leaderboard", "--votes", str(log_dir), "--counts", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: no counts file at {missing}\n"


def test_duckdb_refuses_jsonl_with_the_engine_to_use(tmp_path, capsys):
    (tmp_path / "shard.jsonl").write_text("")
    assert main(["counts", "--votes", str(tmp_path), "--out", str(tmp_path / "c.parquet")]) == 2
    assert "--engine python" in capsys.readouterr().err


def test_the_counts_alone_give_the_bradley_terry_board_without_elo(log_dir, tmp_path, capsys):
    """A researcher with only the counts file (e.g. Spark's, from votes kept elsewhere) gets
    the board: every number but sequential Elo, which needs the votes' order, and a warning
    that says so."""
    reference = _board(capsys, "--votes", str(log_dir), "--engine", "python")
    out = tmp_path / "counts.parquet"
    assert main(["counts", "--engine", "duckdb", "--votes", str(log_dir), "--out", str(out)]) == 0
    capsys.readouterr()
    alone = _board(capsys, "--counts", str(out))
    assert [row["elo"] for row in alone["rows"]] == [None] * len(reference["rows"])
    assert alone["warnings"] == [*reference["warnings"], NO_VOTE_ORDER]
    without_elo = [{**row, "elo": None} for row in reference["rows"]]
    assert {**alone, "warnings": None} == {**reference, "rows": without_elo, "warnings": None}
    assert main(["leaderboard", "--arena", "tts-en", "--counts", str(out), "--format", "csv"]) == 0
    header, first, *_ = capsys.readouterr().out.splitlines()
    assert first.split(",")[header.split(",").index("elo")] == ""


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--method", "elo"], "--method elo needs the votes in time order"),
     (["--style-control"], "--style-control reads the votes")],
)  # fmt: skip
def test_what_the_counts_alone_cannot_answer_is_refused(log_dir, tmp_path, capsys, extra, message):
    out = tmp_path / "counts.parquet"
    assert main(["counts", "--engine", "duckdb", "--votes", str(log_dir), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--arena", "tts-en", "--counts", str(out), *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_board_needs_votes_a_repo_or_counts(capsys):
    assert main(["leaderboard"]) == 2
    assert "give --votes PATH, --repo ID or --counts FILE" in capsys.readouterr().err


def test_a_board_from_a_counts_file_names_the_clock_its_votes_were_judged_by(
    log_dir, tmp_path, capsys
):
    """A vote after the reader's clock is skipped as from the future, so the clock is part
    of what a board was computed from. The counts file keeps the one ``counts`` used
    (``--read-at``), and a board from the file alone reports it as ``revision.read_at``:
    it was null, so a researcher could not tell which votes a file from elsewhere could
    hold. A file without one (written before) still gives a board, with ``read_at`` null."""
    import pyarrow.parquet as pq

    out = tmp_path / "counts.parquet"
    clock = "2030-01-02T03:04:05.678901Z"
    assert main(["counts", "--engine", "duckdb", "--votes", str(log_dir), "--out", str(out),
                 "--read-at", clock]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["leaderboard", "--arena", "tts-en", "--format", "json", "--counts", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["revision"]["read_at"] == clock
    older = tmp_path / "older.parquet"
    table = pq.read_table(out)
    meta = {k: v for k, v in table.schema.metadata.items() if k != b"arena.read_at_us"}
    pq.write_table(table.replace_schema_metadata(meta), older)
    assert (
        main(["leaderboard", "--arena", "tts-en", "--format", "json", "--counts", str(older)]) == 0
    )
    assert json.loads(capsys.readouterr().out)["revision"]["read_at"] is None
    broken = tmp_path / "broken.parquet"
    pq.write_table(table.replace_schema_metadata({**meta, b"arena.read_at_us": b"soon"}), broken)
    assert main(["leaderboard", "--arena", "tts-en", "--counts", str(broken)]) == 2
    assert "clock" in capsys.readouterr().err
