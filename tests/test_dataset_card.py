"""What the dataset card (``arena_core/dataset/card.py``) tells researchers: only what holds."""

import re

import pytest

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
