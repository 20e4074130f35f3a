"""What the dataset card (``arena_core/dataset/card.py``) tells researchers: only what holds."""

import re

import httpx2
import pyarrow.parquet as pq
import pytest
from hubfake import REPO, Landed, LocalHubApi, settled, timed_out, writer

from arena_core import cli
from arena_core.dataset.card import dataset_card

CARD = dataset_card("org/votes", space_id="org/arena", arenas=("tts-en",))


def leaderboard_options(capsys) -> set[str]:
    with pytest.raises(SystemExit):
        cli.main(["leaderboard", "--help"])
    return set(re.findall(r"--[a-z][a-z-]+", capsys.readouterr().out))


def test_the_card_does_not_promise_the_spaces_board_from_a_command_without_its_settings(capsys):
    """The card said its plain command "prints exactly the board the Space shows", but the
    Space's board also depends on the commit, the models it could not run and its clock:
    the card now sends the reader to the command printed under each board, and to a
    snapshot's settings and revision, naming the options that carry them."""
    assert "prints exactly the board the Space shows" not in CARD
    reproduce = " ".join(
        CARD.split("## Reproduce the leaderboard")[1].split("## Privacy")[0].split()
    )
    named = set(re.findall(r"--[a-z][a-z-]+", reproduce))
    assert {"--repo", "--revision", "--unavailable", "--read-at"} <= named
    assert named <= leaderboard_options(capsys)  # only options the command has
    assert "read_at" in reproduce and "settings" in reproduce
    assert "command printed under that board" in reproduce


def test_the_card_says_a_pushed_file_can_be_replaced_by_a_retry_with_more_rows(tmp_path):
    """The card said pushed files are "never rewritten"; a push the Hub took whose answer
    was lost is retried under the same name with the newer votes too. The Hub is
    ``LocalHubApi`` (tests/hubfake.py), a folder."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    settled(sync)
    log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb", vote="a")
    api.failures = [Landed(timed_out())]
    with pytest.raises(httpx2.ReadTimeout):
        sync.uploader.trigger().result()
    (pushed,) = (api.repo_dir(REPO) / "data").glob("*.parquet")
    log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb", vote="b")
    sync.uploader.trigger().result()
    assert [p.name for p in (api.repo_dir(REPO) / "data").glob("*.parquet")] == [pushed.name]
    assert pq.read_metadata(pushed).num_rows == 2  # the same name, rewritten with more rows
    sync.flush(timeout=5)
    log.close()
    files = " ".join(CARD.split("## Files")[1].split("## Schema")[0].split())
    pushes = files.split("- `data/votes-<process>-<n>.parquet`:")[1].split("- `data/compacted")[0]
    assert "never rewritten" not in pushes
    assert "same name" in pushes and "more rows" in pushes


def test_the_cards_audio_join_says_null_matches_null():
    """The card joins the audio to the votes on six columns, ``category`` among them: null
    for every vote of an arena whose prompts have no category (optional in the registry),
    and the versions null when unknown. Joined with SQL's ``=``, as the card read, such votes
    found no audio at all: the card says null matches null, and the join it names does."""
    import duckdb
    import pyarrow as pa

    assert "IS NOT DISTINCT FROM" in CARD
    votes = pa.table({"arena": ["a"], "model_a": ["m"], "model_a_version": pa.array([None], pa.string()),
                      "prompt_id": ["p1"], "prompt": ["Hi."], "category": pa.array([None], pa.string())})  # fmt: skip
    audio = votes.rename_columns(["arena", "model", "model_version", "prompt_id", "prompt",
                                  "category"])  # fmt: skip
    pairs = [("arena", "arena"), ("model_a", "model"), ("model_a_version", "model_version"),
             ("prompt_id", "prompt_id"), ("prompt", "prompt"), ("category", "category")]  # fmt: skip
    con = duckdb.connect()
    con.register("votes", votes)
    con.register("audio", audio)
    for op, found in (("=", 0), ("IS NOT DISTINCT FROM", 1)):
        on = " AND ".join(f"v.{v} {op} a.{a}" for v, a in pairs)
        assert (
            con.execute(f"SELECT count(*) FROM votes v JOIN audio a ON {on}").fetchone()[0] == found
        )
