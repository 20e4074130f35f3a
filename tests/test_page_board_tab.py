"""The Leaderboard tab's rule for overlapping requests: the page's newest wins."""

from arena_core.page.board_tab import _newest


def test_a_request_answered_after_a_later_one_is_dropped():
    """Numbers as the page counted its requests, in the order the server got them."""
    asks: dict = {}
    assert _newest(asks, 2)  # the view switch reaches the server first
    assert not _newest(asks, 1)  # the board's first load, held up: stale on arrival
    assert _newest(asks, 2)  # checked again once drawn: still the newest
    assert _newest(asks, 3)
    assert not _newest(asks, 2)  # drawn meanwhile, but 3 was asked for: dropped


def test_a_request_without_a_number_is_drawn():
    """The page's ``js=`` did not run (an old page, a client of its own): nothing to compare."""
    asks = {"newest": 5}
    assert _newest(asks, None)
    assert asks == {"newest": 5}


def test_sessions_do_not_drop_each_others_requests():
    mine, theirs = {}, {}
    assert _newest(mine, 7)
    assert _newest(theirs, 1)
