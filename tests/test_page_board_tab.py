"""The Leaderboard tab's rule for overlapping requests: the page's newest wins."""

from types import SimpleNamespace

from arena_core.page.board_tab import _arenas_shown, _newest


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


def test_the_tabs_arenas_are_choices_only_offered_first():
    """The tab's answer never sets the arena (it was read when the tab opened, and one
    followed from the Arena tab since would be set back); it lists the offered arenas, then
    the others with votes or on the board, in the registry's order."""
    arenas = [SimpleNamespace(id=i, title=i.upper()) for i in ("chat", "en", "ja", "img", "x")]
    votes = {"img": 3}
    service = SimpleNamespace(
        registry=SimpleNamespace(arenas=arenas),
        board=lambda a: SimpleNamespace(votes_used=votes.get(a, 0)),
    )
    update = _arenas_shown(service, {"en", "ja"}, "chat")
    assert "value" not in update
    assert [a for _, a in update["choices"]] == ["en", "ja", "chat", "img"]
    assert [a for _, a in _arenas_shown(service, {"en", "ja"}, "en")["choices"]] == [
        "en", "ja", "img"]  # fmt: skip
