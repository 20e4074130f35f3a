"""The sliding-window rate limit: votes leave the window one by one, and a restart keeps it."""

import pytest

from arena_core.integrity.limiter import RateLimiter


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


def votes_at(limiter, clock, times, voter="v"):
    out = []
    for t in times:
        clock.now = t
        out.append(limiter.allow(voter))
    return out


def test_rate_limit_slides_with_time():
    clock = Clock()
    limiter = RateLimiter(limit=2, window=60, clock=clock)
    assert [limiter.allow("v") for _ in range(3)] == [True, True, False]
    assert limiter.allow("w")
    clock.now = 61
    assert limiter.allow("v")


def test_votes_leave_the_window_one_by_one():
    # Limit 3 per 100 s, the voter never idle: each counted vote frees one place exactly
    # 100 s after it was cast, not before. (Worked by hand: at t=105 the window (5, 105]
    # still holds 10 and 20 and 100; at t=110 the vote of t=10 has left it.)
    clock = Clock()
    limiter = RateLimiter(limit=3, window=100, clock=clock)
    times = [0, 10, 20, 25, 99.9, 100, 105, 109.9, 110, 115, 120, 199.9, 200, 201]
    expected = [
        True,
        True,
        True,
        False,
        False,
        True,
        False,
        False,
        True,
        False,
        True,
        False,
        True,
        False,
    ]
    assert votes_at(limiter, clock, times) == expected


def test_votes_over_the_limit_do_not_extend_the_wait():
    clock = Clock()
    limiter = RateLimiter(limit=2, window=60, clock=clock)
    assert votes_at(limiter, clock, [0, 1]) == [True, True]
    assert votes_at(limiter, clock, range(2, 60)) == [False] * 58  # a flood, all refused
    assert votes_at(limiter, clock, [60, 61, 62]) == [True, True, False]


def test_each_voter_has_a_quota_of_their_own():
    clock = Clock()
    limiter = RateLimiter(limit=1, window=60, clock=clock)
    assert [limiter.allow(v) for v in ("a", "b", "a", "c", "b")] == [True, True, False, True, False]


def test_a_restart_restores_the_last_window():
    clock = Clock(1000.0)
    limiter = RateLimiter(limit=3, window=100, clock=clock)
    # From the log: v voted 90 s, 30 s and 10 s ago; w 150 s ago (outside the window);
    # u's vote is stamped 2 s in the future (a clock that was ahead).
    entered = limiter.restore([("v", 30.0), ("v", 90.0), ("w", 150.0), ("v", 10.0), ("u", -2.0)])
    assert entered == 4
    assert not limiter.allow("v")  # three in the window already
    clock.now = 1010.0  # the vote of 90 s ago leaves at 1010
    assert limiter.allow("v") and not limiter.allow("v")
    assert limiter.allow("w") and limiter.allow("w") and limiter.allow("w")
    assert not limiter.allow("w")
    assert limiter.allow("u") and limiter.allow("u") and not limiter.allow("u")


def test_idle_voters_are_forgotten():
    clock = Clock()
    limiter = RateLimiter(limit=2, window=10, clock=clock)
    for k in range(100):
        limiter.allow(f"v{k}")
    assert len(limiter) == 100
    clock.now = 25
    limiter.allow("late")
    assert len(limiter) == 1


@pytest.mark.parametrize(("limit", "window"), [(0, 10), (1, 0), (-1, 5)])
def test_a_limit_must_be_positive(limit, window):
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(limit, window)


def test_a_window_may_be_shorter_than_a_second():
    clock = Clock()
    limiter = RateLimiter(limit=1, window=0.5, clock=clock)
    assert votes_at(limiter, clock, [0.0, 0.4, 0.5]) == [True, False, True]


def test_a_limit_refusal_says_what_is_wrong():
    with pytest.raises(ValueError, match=r"^rate limit and window must be positive$"):
        RateLimiter(0, 10)


def test_a_restored_vote_leaves_the_window_exactly_window_seconds_after_it_was_cast():
    # Cast 0.5 s before the restart (an age under a second must not be rounded), window 100:
    # it leaves at restart + 99.5, not a moment before.
    clock = Clock(1000.0)
    limiter = RateLimiter(limit=1, window=100, clock=clock)
    assert limiter.restore([("v", 0.5)]) == 1
    clock.now = 1099.4
    assert not limiter.allow("v")
    clock.now = 1099.5
    assert limiter.allow("v")


def test_a_vote_stamped_in_the_future_counts_as_cast_at_the_restart():
    """A vote logged by a clock that was ahead (a negative age) counts as cast at the
    restart: its voter is held for one window, not for the window plus the clock's error
    (an hour ahead kept them out an hour longer)."""
    clock = Clock(1000.0)
    limiter = RateLimiter(limit=1, window=100, clock=clock)
    assert limiter.restore([("v", -3600.0)]) == 1
    clock.now = 1099.9
    assert not limiter.allow("v")
    clock.now = 1100.0
    assert limiter.allow("v")


def test_a_vote_exactly_one_window_old_is_not_restored():
    clock = Clock(1000.0)
    limiter = RateLimiter(limit=1, window=100, clock=clock)
    assert limiter.restore([("v", 100.0), ("v", 99.0)]) == 1


def test_restored_votes_in_any_order_leave_the_window_oldest_first():
    clock = Clock(1000.0)
    limiter = RateLimiter(limit=2, window=100, clock=clock)
    assert limiter.restore([("v", 10.0), ("v", 60.0)]) == 2  # the log gives newest first here
    clock.now = 1040.0  # the vote of 60 s ago left at 1040
    assert limiter.allow("v") and not limiter.allow("v")


def test_idle_voters_are_swept_at_most_once_per_window():
    # Worked by hand, window 10, the limiter made at t=0: the sweep at t=10 (one window
    # after the last) forgets "a" (last vote at 0 <= 10 - 10) and keeps "b" (voted at 5).
    # The next sweep is due at t=20: at t=16 "b" (idle since 5 <= 16 - 10) is still there.
    clock = Clock()
    limiter = RateLimiter(limit=5, window=10, clock=clock)
    votes_at(limiter, clock, [0.0], voter="a")
    votes_at(limiter, clock, [5.0], voter="b")
    votes_at(limiter, clock, [10.0], voter="c")
    assert len(limiter) == 2  # b, c
    votes_at(limiter, clock, [16.0], voter="d")
    assert len(limiter) == 3  # b, c, d
    votes_at(limiter, clock, [20.0], voter="e")
    assert len(limiter) == 2  # b (last at 5) and c (last at 10 <= 20 - 10) forgotten: d, e


def test_a_held_limiter_answers_after_restore_and_refuses_if_never_restored():
    import threading

    limiter = RateLimiter(2, 600, restore_wait=5)
    limiter.hold()
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(limiter.allow("v")))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # no answer before the log's recent votes are known
    limiter.restore([("v", 10.0), ("v", 20.0)])  # two counted votes in the window already
    waiting.join(5)
    assert answers == [False]
    late = RateLimiter(2, 600, restore_wait=0.05)
    late.hold()
    assert late.allow("w") is False  # nobody can check its quota: the vote does not count
    late.release()
    assert late.allow("w") is True


def test_a_place_given_back_is_free_again_and_only_that_one():
    clock = Clock()
    limiter = RateLimiter(limit=2, window=60, clock=clock)
    first = limiter.take("v")
    clock.now = 10
    second = limiter.take("v")
    assert (first, second) == (0, 10) and limiter.take("v") is None
    limiter.give_back("v", second)  # its write was rolled back
    limiter.give_back("v", second)  # given back twice: frees nothing more
    limiter.give_back("w", first)  # another voter's: nothing
    clock.now = 20
    assert limiter.take("v") == 20 and limiter.take("v") is None
    clock.now = 61  # the first place leaves the window at 60, the one taken at 20 stays
    assert limiter.allow("v") and not limiter.allow("v")
