"""The command line fails as a tool should: one line on stderr, exit 2, nothing half-written.

Each case was a traceback (or worse) found by trying the CLI as a user would: ``--out``
naming a folder or a full disk, output piped into ``head``, a ``--since`` that no
timestamp can name, and ``compact --repo`` without the Hub. The Hub cannot be reached
from the test machine, so its offline mode stands in for any network failure.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arena_core.votes.log import VoteLog
from arena_core.votes.parquet import write_atomically

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, env=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena_core", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, **(env or {})}, **kwargs)  # fmt: skip


@pytest.fixture(scope="module")
def votes(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("votes")
    log = VoteLog(folder)
    # 300 models: the board's JSON (about 200 KB) outgrows a pipe's buffer (64 KB), so a
    # reader that goes away is certain to be written to.
    for k in range(1200):
        log.append(arena="tts", model_a=f"m{k % 300}", model_b=f"m{(k + 1) % 300}",
                   vote="ab"[k % 2], voter=f"v{k}")  # fmt: skip
    log.close()
    return folder


def one_line_error(proc, *words):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0]


def test_out_naming_a_folder_is_one_line(votes, tmp_path):
    one_line_error(
        cli("export", "--votes", votes, "--out", tmp_path), "Is a directory", str(tmp_path)
    )
    one_line_error(cli("counts", "--votes", votes, "--out", tmp_path, "--engine", "python"),
                   "Is a directory")  # fmt: skip


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="no /dev/full here")
@pytest.mark.parametrize("command", ["export", "counts"])
def test_a_full_disk_is_one_line_and_the_device_survives(votes, command):
    """pyarrow deletes the path of a failed write: as root, /dev/full itself was removed."""
    proc = cli(command, "--votes", votes, "--out", "/dev/full",
               *(["--engine", "python"] if command == "counts" else []))  # fmt: skip
    one_line_error(proc, "No space left on device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "counts.parquet"
    path.write_bytes(b"old")

    def fail(f):
        f.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(path, fail)
    assert path.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [path]


def test_a_pipe_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomically(fifo, lambda f: f.write(b"counts"))
    reader.join(10)
    assert got == [b"counts"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_output_piped_into_head_ends_quietly(votes):
    """``leaderboard ... | head -1``: the reader goes away; no BrokenPipeError traceback,
    and the exit status of a process killed by SIGPIPE."""
    proc = subprocess.Popen([sys.executable, "-m", "arena_core", "leaderboard", "--votes", str(votes),
                             "--arena", "tts", "--format", "json", "--bootstrap", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)  # fmt: skip
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()  # before the rest: the writer is blocked on the full pipe
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141 and b"Traceback" not in err and b"BrokenPipe" not in err


@pytest.mark.parametrize(
    "option", [["--since", "0001-01-01T00:00:00+01:00"], ["--until", "9999-12-31T23:00-05:00"]]
)
def test_a_time_outside_the_calendar_is_one_line(votes, option):
    one_line_error(cli("leaderboard", "--votes", votes, *option), "outside the years 1 to 9999")


def test_compact_repo_without_the_hub_is_one_line_and_changes_nothing(tmp_path):
    proc = cli("compact", "--repo", "org/votes", env={"HF_HUB_OFFLINE": "1"})
    one_line_error(proc, "could not compact org/votes, the repo is unchanged", "offline")
