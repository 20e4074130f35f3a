"""The command line's argument surface, fuzzed (hunt of 2026-12-02).

About 1,300 command lines were run in-process and checked against the contract (one
``error:`` line and exit 2 on a failure, nothing on stdout and no file written then, no
traceback, no exit 1): each command's options at the edges (empty, NaN, infinite,
negative and huge numbers, dates out of the calendar or malformed, ``--since`` after
``--until``, control characters and newlines in ids, paths that are folders, devices,
``-``, missing or damaged files, malformed or mismatched registries) and vote files with
damaged rows. What it found, each fixed and tested here:

- ``compact --repo ''`` ended in a ``TypeError`` traceback (the empty repo read as no
  repo, so the missing ``--votes`` folder was opened as ``Path(None)``).
- ``judge`` with an arena the judge is not entered in, or a judge id the registry lacks,
  was refused only after the whole service was built: the ``--data`` folder (a typo, say)
  was made, with ``votes/``, ``cache/`` and ``shaped/`` and two secrets in it.
- ``export --out -`` and ``counts --out -`` wrote a file named ``-`` in the current folder,
  where ``--votes -`` of the same commands reads standard input: ``-`` is now standard
  output, as ``/dev/stdout`` already was.
- ``leaderboard --judge ID --voter-kind human`` printed the judge's board with exit 0, the
  explicit ``--voter-kind`` dropped without a word; the two are now refused together
  unless the kind is ``judge`` (or ``all``, which the judge narrows).

A seeded Hypothesis test keeps drawing ``leaderboard`` lines from the same edges.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_core.cli import main
from tests.test_cli_researcher_edges import ROOT, _parquet, _rows, _shard

REGISTRY = ROOT / "registry.yaml"


def run(capsys, *argv) -> tuple[int, str, str]:
    """``main(argv)`` in this process: (status, stdout, stderr); an argparse error's exit is
    its status."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code: int, out: str, err: str, *words) -> None:
    assert code == 2, err
    assert "Traceback" not in err and out == "", (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], lines[0]


def proc(*args, cwd) -> subprocess.CompletedProcess:
    """The command in a fresh process, its output as bytes (a Parquet file may come out)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "arena_core", *map(str, args)],
                          capture_output=True, cwd=cwd, timeout=120, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def test_compact_of_an_empty_repo_name_is_one_line(capsys, tmp_path):
    """Was: ``TypeError: expected str, bytes or os.PathLike object, not NoneType``."""
    one_line(*run(capsys, "compact", "--repo", ""), "--repo")
    one_line(*run(capsys, "compact", "--repo", "  "), "--repo")


@pytest.mark.parametrize(
    ("arena", "judge", "words"),
    [("nope", "judge/pitch-range", ["does not judge arena 'nope'"]),
     ("tts-en", "judge/nope", ["no judge 'judge/nope'"]),
     ("tts-en", "judge/qwen2.5-72b", ["does not judge arena 'tts-en'"])],
)  # fmt: skip
def test_a_judge_refused_its_arena_makes_no_data_folder(capsys, tmp_path, arena, judge, words):
    """Was: the refusal came after the service was built, so ``--data`` (a typo's folder)
    was made, with its vote, cache and shaped-audio folders and their secrets."""
    data = tmp_path / "typo"
    code, out, err = run(capsys, "judge", "--arena", arena, "--judge", judge, "--data", data,
                         "--registry", REGISTRY, "--quiet", "--battles", "1")  # fmt: skip
    one_line(code, out, err, *words)
    assert not data.exists(), sorted(p.name for p in data.rglob("*"))


def test_out_dash_is_standard_output_not_a_file_named_dash(tmp_path):
    """Was: a file ``-`` in the current folder, and nothing on stdout."""
    votes = _shard(tmp_path / "v" / "votes.jsonl")
    work = tmp_path / "work"
    work.mkdir()
    done = proc("export", "--votes", votes, "--out", "-", cwd=work)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 60 and not (work / "-").exists()

    counts = proc("counts", "--engine", "python", "--votes", votes, "--out", "-", cwd=work)
    assert counts.returncode == 0, counts.stderr
    assert not (work / "-").exists()
    (tmp_path / "c.parquet").write_bytes(counts.stdout)
    assert pq.read_table(tmp_path / "c.parquet").num_rows > 0


def test_a_judges_board_with_another_voter_kind_is_refused(capsys, tmp_path):
    """Was: ``--judge X --voter-kind human`` printed the judge's board, exit 0."""
    rows = _rows()
    for row in rows[::2]:
        row.update(voter_kind="judge", judge="judge/x", voter=None)
    votes = _shard(tmp_path / "votes.jsonl", rows)
    one_line(*run(capsys, "leaderboard", "--votes", votes, "--arena", "tts-en", "--judge",
                  "judge/x", "--voter-kind", "human"), "--judge", "--voter-kind human")  # fmt: skip


# --- generated command lines -------------------------------------------------------------

NUMBERS = ["", "0", "-1", "1", "nan", "inf", "-inf", "1e308", "0.5", "abc", "-0", "1_0"]
DATES = ["", "2025-13-01", "0001-01-01", "9999-12-31T23:59:59+14:00", "2025-06-01T10:00Z",
         "2025-06-01", "now", "2025-06-01\n", "-2025-01-01"]  # fmt: skip
IDS = ["", " ", "tts-en", "tts-en\n", "\x1b[31m", "é", "judge/x", "m1"]
OPTIONS = {
    "--prior-weight": [*NUMBERS, "fitted"], "--bootstrap": NUMBERS, "--half-life": NUMBERS,
    "--seed": NUMBERS, "--since": DATES, "--until": DATES, "--read-at": DATES,
    "--arena": IDS, "--category": [*IDS, "en"], "--judge": IDS, "--unavailable": IDS,
    "--method": ["bt", "elo"], "--format": ["table", "json", "csv"],
    "--voter-kind": ["human", "judge", "all"], "--engine": ["python", "duckdb", "auto"],
}  # fmt: skip
FLAGS = ["--style-control", "--include-flagged", "--fastchat-all"]


@pytest.fixture(scope="module")
def vote_files(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("fuzz")
    return [_shard(folder / "shards" / "votes.jsonl"), _parquet(folder / "pq" / "votes.parquet")]


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    source=st.sampled_from([0, 1]),
    options=st.dictionaries(st.sampled_from(sorted(OPTIONS)), st.integers(0, 99), max_size=4),
    flags=st.lists(st.sampled_from(FLAGS), max_size=2, unique=True),
    registry=st.booleans(),
)
def test_generated_leaderboard_lines_keep_the_contract(capsys, vote_files, source, options,
                                                        flags, registry):  # fmt: skip
    argv = ["leaderboard", "--votes", vote_files[source]]
    for option, k in options.items():
        values = OPTIONS[option]
        argv += [option, values[k % len(values)]]
    argv += flags + (["--registry", REGISTRY] if registry else [])
    code, out, err = run(capsys, *argv)
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2 and "usage:" not in err:  # argparse's own refusals print their usage
        one_line(code, out, err)
