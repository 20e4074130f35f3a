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

import pyarrow as pa
import pyarrow.parquet as pq
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


@pytest.fixture(scope="module")
def wide_votes(tmp_path_factory) -> Path:
    """300 models with 500-character ids: every format's board (table 0.2 MB, CSV 0.3 MB,
    JSON 0.6 MB) is larger than a pipe's buffer (64 KB) and what a reader takes at once."""
    folder = tmp_path_factory.mktemp("wide")
    log = VoteLog(folder)
    name = [f"m{k:03d}-" + "a-model-with-a-long-name-" * 20 for k in range(300)]
    for k in range(1200):
        log.append(arena="tts", model_a=name[k % 300], model_b=name[(k + 1) % 300],
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


@pytest.mark.parametrize("hops", [1, 2])
def test_dev_stdout_of_a_command_whose_output_goes_to_a_file_stays_a_link(tmp_path, hops):
    """``--out /dev/stdout`` with the output appended to a file (``>>``): the link led to a
    regular file, so the rename replaced ``/dev/stdout`` itself with a file, for every later
    program on the machine (a clean-clone run's ``flite -o /dev/stdout`` then wrote nothing),
    and the command's own output got nothing. Written through the stream, it lands where the
    shell put it, after what was there. A link of our own into ``/proc`` stands in for it."""
    redirected = tmp_path / "redirected.txt"
    redirected.write_bytes(b"earlier line\n")
    fd = os.open(redirected, os.O_WRONLY | os.O_APPEND)
    try:
        link = tmp_path / "stdout"
        os.symlink(f"/proc/self/fd/{fd}", link)
        for k in range(1, hops):  # a link to the link, as /dev/stdout -> /proc/self/fd/1
            os.symlink(link.name, tmp_path / f"stdout{k}")
            link = tmp_path / f"stdout{k}"
        write_atomically(link, lambda f: f.write(b"counts"))
        assert redirected.read_bytes() == b"earlier line\ncounts" and link.is_symlink()
    finally:
        os.close(fd)
    with pytest.raises(OSError, match="Bad file descriptor"):  # closed: an error, not a file
        write_atomically(link, lambda f: f.write(b"counts"))
    assert link.is_symlink()


def test_a_regular_file_is_replaced_atomically_wherever_it_lies(tmp_path):
    """Only a process's streams, devices and pipes are written through; a regular file (under
    ``/dev/shm`` too) keeps the temporary file and the rename, so a reader never sees half."""
    target = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    path = target / f"arena-atomic-{os.getpid()}.json"
    try:
        path.write_bytes(b"old")
        inode = path.stat().st_ino
        write_atomically(path, lambda f: f.write(b"new"))
        assert path.read_bytes() == b"new" and path.stat().st_ino != inode  # renamed into place
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    "command", [["export", "--out", "OUT"], ["leaderboard", "--format", "json"]]
)
def test_a_closed_standard_output_is_no_error(votes, tmp_path, command):
    """``... >&-``: standard output closed, so Python has no ``sys.stdout``. A command that
    prints nothing (``export --out FILE``) wrote its file and ended in a traceback, exit
    1, once the command line flushed standard output before returning; one that prints
    has nowhere to print, as with ``print``, and succeeds too."""
    out = tmp_path / "out.jsonl"
    args = [str(out) if a == "OUT" else a for a in command]
    proc = subprocess.run([sys.executable, "-m", "arena_core", *args, "--votes", str(votes),
                           "--arena", "tts"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          cwd=ROOT, timeout=120, close_fds=True,
                          preexec_fn=lambda: os.close(1))  # fmt: skip
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert "export" not in command or out.stat().st_size > 0


@pytest.mark.parametrize("fmt", ["json", "table", "csv"])
def test_output_piped_into_head_ends_quietly(wide_votes, fmt):
    """``leaderboard ... | head -1``: the reader goes away; no BrokenPipeError traceback,
    and the exit status of a process killed by SIGPIPE. The table (and, for a day, the
    JSON) went out in one write larger than the pipe, which Python's buffered stream cut
    short without an error: exit status 0, the output silently incomplete."""
    proc = subprocess.Popen([sys.executable, "-m", "arena_core", "leaderboard", "--votes", str(wide_votes),
                             "--arena", "tts", "--format", fmt, "--bootstrap", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)  # fmt: skip
    assert proc.stdout.read(1) == {"json": b"{", "table": b"=", "csv": b"r"}[fmt]
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


# --- Answers the votes cannot give are refused by name, not printed as an empty board.

REGISTRY = """
arenas:
  - id: tts
    title: TTS
    modality: audio
    prompts: [{id: p1, text: "Hello there.", category: en}]
    models:
      - {id: m0, name: Zero, backend: {type: espeak, voice: en-us}}
      - {id: m1, name: One, backend: {type: espeak, voice: en-us}}
"""


@pytest.fixture(scope="module")
def parquet_votes(tmp_path_factory) -> Path:
    """Votes in two categories and from one judge, compacted to Parquet (for DuckDB)."""
    from arena_core.dataset.compact import compact

    folder = tmp_path_factory.mktemp("parquet")
    log = VoteLog(folder)
    for k in range(40):
        log.append(arena="tts", model_a="m0", model_b="m1", vote="ab"[k % 3 == 0],
                   category=("en", "de")[k % 2], voter=f"v{k}")  # fmt: skip
    log.append(arena="tts", model_a="m1", model_b="m0", vote="a", voter_kind="judge",
               judge="judge/a", voter="judge:judge/a")  # fmt: skip
    log.close()
    compact(folder, min_age_minutes=0)
    return folder


@pytest.mark.parametrize("engine", ["python", "duckdb"])
@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--arena", "nope"], "no votes of arena 'nope' (the votes hold: tts)"),
        (["--arena", "tts", "--category", "fr"], "no votes of category 'fr' in tts (the votes hold: de, en)"),
        (["--arena", "tts", "--judge", "judge/b"], "no votes of judge 'judge/b' in tts (the votes hold: judge/a)"),
    ],
)  # fmt: skip
def test_an_arena_category_or_judge_the_votes_lack_is_named(parquet_votes, engine, option, words):
    if engine == "duckdb" and "--judge" in option:  # counts hold no battles: refused first
        words = "counts each battle once, which needs each vote's battle: use --engine python"
    one_line_error(cli("leaderboard", "--votes", parquet_votes, "--engine", engine, *option), words)


def test_what_the_votes_hold_is_still_answered(parquet_votes, tmp_path):
    for option in (["--category", "de"], ["--judge", "judge/a"]):
        proc = cli("leaderboard", "--votes", parquet_votes, "--arena", "tts", "--format", "json",
                   *option)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    # An arena or category the registry lists but nobody voted in yet: an empty board.
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    empty = tmp_path / "none"
    empty.mkdir()
    for votes in (empty, parquet_votes):
        proc = cli("leaderboard", "--votes", votes, "--registry", tmp_path / "registry.yaml",
                   "--category", "en" if votes == empty else "de")  # fmt: skip
        assert proc.returncode == 0, proc.stderr


def test_no_valid_vote_says_so_and_why(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(cli("leaderboard", "--votes", empty), f"no vote in {empty}")
    refused = tmp_path / "refused"
    refused.mkdir()
    mistyped = pa.table({"vote_id": [1, 2], "ts": ["2026-01-01T00:00:00Z"] * 2})
    pq.write_table(mistyped, refused / "a.parquet")
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    for extra in ([], ["--registry", tmp_path / "registry.yaml"]):  # even with a registry
        proc = cli("leaderboard", "--votes", refused, *extra)
        assert proc.returncode == 2 and "no valid vote" in proc.stderr
        assert "1 unreadable_file" in proc.stderr and "Traceback" not in proc.stderr


def test_export_and_compact_refuse_what_they_cannot_do(votes, tmp_path):
    one_line_error(cli("export", "--votes", votes, "--arena", "nope", "--out", tmp_path / "x.json"),
                   "no votes of arena 'nope' (the votes hold: tts)")  # fmt: skip
    assert not (tmp_path / "x.json").exists()
    shard = next(votes.glob("*.jsonl"))
    one_line_error(cli("compact", "--votes", shard), "takes a vote folder", "is a file")


@pytest.mark.parametrize(("option", "value"), [("--seed", "-1"), ("--bootstrap", "1.5")])
def test_counts_name_the_option_at_fault(votes, option, value):
    proc = cli("leaderboard", "--votes", votes, option, value)
    assert proc.returncode == 2 and f"argument {option}: expected a whole number" in proc.stderr


def test_a_byte_order_mark_costs_no_vote(votes, tmp_path):
    """Files saved by a Windows editor start with a UTF-8 byte-order mark: a FastChat export
    was read as JSONL (and refused), a JSONL file lost its first vote."""
    from arena_core.votes.read import read_votes

    export = ROOT / "tests" / "data" / "fastchat_clean_battle_sts.json"
    shard = next(votes.glob("*.jsonl"))
    for original in (export, shard):
        marked = tmp_path / original.name
        marked.write_bytes(b"\xef\xbb\xbf" + original.read_bytes())
        plain, bom = read_votes([original]), read_votes([marked])
        assert bom.table.num_rows == plain.table.num_rows > 0 and bom.skipped == plain.skipped


@pytest.mark.parametrize(
    "argv",
    [["--scenario", "voters", "--seeds", "-1"],  # ZeroDivisionError
     ["--scenario", "complementarity", "--seeds", "0"],  # silently the default
     ["--scenario", "complementarity", "--comp-specialty", "nan"],  # a table of NaN
     ["--scenario", "complementarity", "--comp-votes", "0"],  # an empty table, exit 0
     ["--scenario", "matchmaking", "--mm-models", "1"],  # "low >= high"
     ["--scenario", "matchmaking", "--mm-draw-rate", "1.5"],
     ["--scenario", "matchmaking", "--mm-draw-rate", "0.7"],  # passed, then the truth refused it
     ["--scenario", "matchmaking", "--mm-drift", "-50"],  # written to the JSON, run as 0
     ["--scenario", "voters", "--voters-alpha", "1"],
     ["--scenario", "voters", "--voters-campaigners", "0"],  # ZeroDivisionError
     ["--scenario", "calibration", "--calibration-votes", "10"]],  # TypeError
)  # fmt: skip
def test_simulation_options_no_run_can_use_are_refused_by_name(argv, capsys):
    from arena_core.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["simulate", *argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument {argv[-2]}:" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["--mm-refit", "30"], ["--mm-report-at", "130"],
                                  ["--mm-votes", "200", "--mm-report-at", "300"]])  # fmt: skip
def test_report_points_the_simulation_never_measures_are_refused(argv, capsys):
    """The board is measured at its refits: a report point off them (the defaults 2000 and
    5000 with ``--mm-refit 30``) or past the last vote gave no width row and coverage
    "never", with exit 0."""
    from arena_core.cli import main

    code = main(["simulate", "--scenario", "matchmaking", "--seeds", "1", *argv])
    err = capsys.readouterr().err
    assert code == 2 and "--mm-report-at" in err and "Traceback" not in err


def test_analyses_of_an_arena_the_votes_lack_are_refused(votes, tmp_path):
    """``analyze complementarity`` and ``judges`` printed empty reports with exit 0."""
    one_line_error(cli("analyze", "complementarity", "--votes", votes, "--arena", "nope"),
                   "no votes of arena 'nope' (the votes hold: tts)")  # fmt: skip
    (tmp_path / "registry.yaml").write_text(REGISTRY.replace("id: tts", "id: other"))
    one_line_error(cli("judges", "--votes", votes, "--arena", "other", "--registry",
                       tmp_path / "registry.yaml"), "no votes of arena 'other'")  # fmt: skip


def test_a_library_message_over_several_lines_is_printed_as_one(votes, tmp_path):
    """DuckDB's messages span lines (a missing httpfs extension: four). The Hub cannot be
    reached from here, and no httpfs is installed, so an hf:// path fails either way."""
    proc = cli("counts", "--votes", "hf://datasets/org/votes", "--out", tmp_path / "c.parquet",
               "--engine", "duckdb", env={"HF_HUB_OFFLINE": "1"})  # fmt: skip
    one_line_error(proc)
    assert not (tmp_path / "c.parquet").exists()


def test_the_counts_path_reports_skipped_rows_on_stderr_as_the_reader_does(tmp_path):
    from scale_logs import damaged_log

    folder = damaged_log(tmp_path / "votes")
    for engine in ("python", "duckdb"):
        proc = cli("leaderboard", "--votes", folder, "--engine", engine, "--arena", "tts-en",
                   "--format", "json")  # fmt: skip
        assert proc.returncode == 0 and "skipped 27 vote rows" in proc.stderr, (engine, proc.stderr)


def test_a_local_glob_of_jsonl_goes_to_the_reader_and_of_parquet_to_any_engine(
    votes, parquet_votes
):
    """A local glob went to DuckDB whatever it matched: JSONL shards gave 'no vote'."""
    shards = cli("leaderboard", "--votes", f"{votes}/*.jsonl", "--format", "json", "--arena", "tts")
    assert shards.returncode == 0 and '"votes_used": 1200' in shards.stdout, shards.stderr
    for engine in ("python", "duckdb"):
        proc = cli("leaderboard", "--votes", f"{parquet_votes}/**/*.parquet", "--engine", engine,
                   "--arena", "tts", "--format", "json")  # fmt: skip
        assert proc.returncode == 0 and '"votes_used": 40' in proc.stdout, (engine, proc.stderr)


@pytest.mark.parametrize("age", ["nan", "-1", "-inf", "inf"])
def test_a_min_age_that_is_no_age_is_one_line_and_compacts_nothing(tmp_path, age):
    """``--min-age nan`` (or a negative age) made every file old enough: a shard written a
    moment ago was rolled up and deleted, exit 0. Only a finite age, 0 or more, is taken;
    with ``--repo``, before anything is downloaded."""
    log = VoteLog(tmp_path)
    log.append(arena="tts", model_a="m1", model_b="m2", vote="a")
    log.close()
    one_line_error(cli("compact", "--votes", tmp_path, f"--min-age={age}"), "--min-age takes")
    assert log.path.exists() and not (tmp_path / "compacted").exists()
    offline = {"HF_HUB_OFFLINE": "1"}
    one_line_error(cli("compact", "--repo", "org/votes", f"--min-age={age}", env=offline),
                   "--min-age takes")  # fmt: skip
