"""Votes from a stream (``--votes -``, a pipe) and an export strict JSON parsers read.

Found by the CLI hunt of 2026-12-01 and fixed a session later: ``zstdcat log.jsonl.zst |
python -m arena_core leaderboard --votes -`` said "no vote file or folder at -", and
``--votes /dev/stdin`` from a pipe, or a shell's ``<(zstdcat ...)``, was refused the same
way; ``export`` wrote the token ``NaN`` for a measurement a log held as NaN.
"""

from __future__ import annotations

import json
import math
import os
import pty
import subprocess
import sys
import threading

import pytest

from arena_core.cli import main
from tests.test_cli_researcher_edges import ROOT, _parquet, _rows, _shard, one_line_error


def cli(*args, stdin=None) -> subprocess.CompletedProcess:
    """The command in a fresh process; ``stdin`` is bytes to pipe in, or a file descriptor
    (a terminal's), or None for no input at all."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1"}  # fmt: skip
    pipe = {"input": stdin} if isinstance(stdin, bytes) else {
        "stdin": subprocess.DEVNULL if stdin is None else stdin}  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "arena_core", *map(str, args)], **pipe,
                          capture_output=True, cwd=ROOT, timeout=120, env=env)  # fmt: skip
    proc.stdout, proc.stderr = proc.stdout.decode(), proc.stderr.decode()
    return proc


def _board(stdout: str) -> list[tuple]:
    """A JSON board's rows, without the clock and the inputs' names that differ by run."""
    return [tuple(sorted(row.items())) for row in json.loads(stdout)["rows"]]


def test_standard_input_is_read_as_the_file_it_carries(tmp_path):
    """JSONL and Parquet, told apart by their first bytes as a file named without a suffix."""
    shard = _shard(tmp_path / "votes.jsonl")
    parquet = _parquet(tmp_path / "votes.parquet")
    want = cli("leaderboard", "--votes", shard, "--arena", "tts-en", "--format", "json")
    assert want.returncode == 0, want.stderr
    for path in (shard, parquet):
        proc = cli("leaderboard", "--votes", "-", "--arena", "tts-en", "--format", "json",
                   stdin=path.read_bytes())  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert _board(proc.stdout) == _board(want.stdout)


def test_a_pipe_named_on_the_command_line_is_read(tmp_path):
    """A named pipe, as a shell's ``<(zstdcat votes.jsonl.zst)`` gives, beside a file."""
    rows = _rows(90)
    first, second = _shard(tmp_path / "a.jsonl", rows[:40]), tmp_path / "fifo"
    os.mkfifo(second)
    data = "".join(json.dumps(r) + "\n" for r in rows[40:]).encode()

    def feed():
        with open(second, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    proc = cli("leaderboard", "--votes", first, second, "--arena", "tts-en", "--format", "json")
    writer.join(timeout=30)
    assert proc.returncode == 0, proc.stderr
    whole = _shard(tmp_path / "whole" / "votes.jsonl", rows)
    want = cli("leaderboard", "--votes", whole, "--arena", "tts-en", "--format", "json")
    assert _board(proc.stdout) == _board(want.stdout)
    assert json.loads(proc.stdout)["rows"][0]["battles"] > 0


def test_a_compressed_stream_is_refused_as_a_compressed_file(tmp_path):
    import gzip

    data = gzip.compress(_shard(tmp_path / "v.jsonl").read_bytes())
    proc = cli("leaderboard", "--votes", "-", "--arena", "tts-en", stdin=data)
    assert proc.returncode == 2
    assert "decompress it" in proc.stderr and "Traceback" not in proc.stderr


def test_standard_input_twice_or_from_a_terminal_is_one_line(tmp_path):
    twice = cli("leaderboard", "--votes", "-", "-", stdin=b"")
    one_line_error(twice, "standard input", "twice")
    # A terminal: the command would wait for votes typed by hand.
    leader, follower = pty.openpty()
    try:
        proc = cli("leaderboard", "--votes", "-", stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    one_line_error(proc, "terminal", "pipe")


def test_the_copy_of_a_stream_is_removed_after_the_command(tmp_path, monkeypatch, capsys):
    import io
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data = _shard(tmp_path / "in" / "v.jsonl").read_bytes()
    stdin = io.TextIOWrapper(io.BytesIO(data))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["leaderboard", "--votes", "-", "--arena", "tts-en", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]
    assert not list(tmp_path.glob("arena-stream-*"))


def test_an_export_is_strict_json_when_a_measurement_is_not_a_number(tmp_path):
    """A log written by another tool may hold NaN or an infinity in a measurement column
    (the readers take them, as Arrow does); the export wrote them as ``NaN``/``Infinity``
    tokens, which jq and ``JSON.parse`` refuse. They are now null, the schema's "no
    measurement", and the export re-imports to the same board."""
    rows = _rows(30)
    for k, row in enumerate(rows):
        row["model_a_lufs"] = [math.nan, math.inf, -23.0][k % 3]
    text = "".join(json.dumps(r) + "\n" for r in rows)  # json.dumps writes NaN, Infinity
    shard = tmp_path / "votes.jsonl"
    shard.write_text(text)
    out = tmp_path / "export.json"
    proc = cli("export", "--votes", shard, "--out", out)
    assert proc.returncode == 0, proc.stderr

    def strict(token):
        raise ValueError(f"not JSON: {token}")

    battles = json.loads(out.read_text(), parse_constant=strict)
    assert [b["model_a_lufs"] for b in battles[:3]] == [None, None, -23.0]
    again = cli("leaderboard", "--votes", out, "--arena", "tts-en", "--format", "json")
    want = cli("leaderboard", "--votes", shard, "--arena", "tts-en", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert _board(again.stdout) == _board(want.stdout)


@pytest.mark.parametrize("raw", ["-", "/dev/null"])
def test_what_counts_as_a_stream(raw):
    from arena_core.cli.streams import is_stream

    assert is_stream(raw)
    assert not is_stream("votes/**/*.parquet") and not is_stream(__file__)
