"""A hunt on the researcher's and integrator's data paths (2026-12-02): FastChat exports,
older schema versions beside new ones, judges' boards, and export/counts/model with odd
inputs. Each test failed on the code before its fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from arena_core.votes.read import read_votes, vote_files
from tests.hubfake import row
from tests.test_cli_streams import cli

DATA = Path(__file__).resolve().parent / "data"
STS = DATA / "fastchat_clean_battle_sts.json"


@pytest.mark.parametrize("name", ["STS.JSON", "clean_battle", "clean_battle.json.txt"])
def test_a_fastchat_export_under_another_name_is_told_by_its_first_bytes(tmp_path, name):
    """README: a file named on the command line under another name is told by its first
    bytes. An export not named ``*.json`` was read as JSONL: its 137 battles became 1,097
    ``invalid_json`` lines and one ``truncated_line``, and the board was refused."""
    path = tmp_path / name
    shutil.copyfile(STS, path)
    assert vote_files([path]) == [(path, "fastchat")]
    votes = read_votes(path)
    assert len(votes) == 137 and not votes.skipped


def test_a_fastchat_export_on_standard_input_is_read_as_an_export():
    """``cat export.json | python -m arena_core leaderboard --votes -``: the stream is
    copied to a file named ``stdin`` and, as the README says, told by its first bytes. It
    was read as JSONL and refused ("no valid vote ... 1097 invalid_json")."""
    want = cli("leaderboard", "--votes", STS, "--format", "json", "--read-at", "2026-12-01")
    got = cli("leaderboard", "--votes", "-", "--format", "json", "--read-at", "2026-12-01",
              stdin=STS.read_bytes())  # fmt: skip
    assert want.returncode == 0, want.stderr
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["rows"] == json.loads(want.stdout)["rows"]


def test_export_reads_a_fastchat_export_into_its_arena_as_the_other_commands_do(tmp_path):
    """``leaderboard``, ``model`` and ``analyze`` read a FastChat export into ``--arena``
    when every file is an export (README, "Reproducing a leaderboard"); ``export --arena``
    refused the same files ("no votes of arena 'sts' (the votes hold: fastchat)"), so the
    export of the board a researcher had just printed could not be written."""
    out = tmp_path / "battles.json"
    proc = cli("export", "--votes", STS, "--arena", "sts", "--out", out)
    assert proc.returncode == 0, proc.stderr
    battles = json.loads(out.read_text())
    assert len(battles) == 137 and {b["arena"] for b in battles} == {"sts"}
    board = cli("leaderboard", "--votes", STS, "--arena", "sts", "--format", "json",
                "--read-at", "2026-12-01")  # fmt: skip
    again = cli("leaderboard", "--votes", out, "--arena", "sts", "--format", "json",
                "--read-at", "2026-12-01")  # fmt: skip
    assert json.loads(again.stdout)["rows"] == json.loads(board.stdout)["rows"]


@pytest.mark.parametrize("name", ["stdin", "votes.log", "0-63"])
def test_a_vote_log_whose_first_line_is_a_damaged_list_is_still_read_as_lines(tmp_path, name):
    """Told by its first byte alone, a log named other than ``*.jsonl`` whose first line was
    a damaged ``[1, 2]`` was read as one broken FastChat export: its good votes were neither
    read nor counted (found by the day's review)."""
    good = [json.dumps(row(k)) for k in range(5)]
    path = tmp_path / name
    path.write_text("[1, 2]\n" + "\n".join(good) + "\n")
    votes = read_votes(path)
    assert len(votes) == 5 and votes.skipped == {"not_an_object": 1}


@pytest.mark.parametrize(("indent", "lead"), [(None, ""), (2, ""), (2, "\n  \n")])
def test_a_fastchat_export_of_one_line_or_indented_is_told_under_any_name(tmp_path, indent, lead):
    battles = json.loads(STS.read_text())
    path = tmp_path / "stdin"
    path.write_text(lead + json.dumps(battles, indent=indent) + "\n")  # blank lines first, too
    assert len(read_votes(path)) == len(read_votes(STS)) > 0
