"""The battle record (arena_core/space/battles.py) on its own, with a clock moved by hand.

What a vote is checked against: one vote per battle, only after delivery and the
listening gate, only before expiry. The service tests go through the whole app; these
pin each rule at its boundary (the second a battle expires, the second the gate opens).
"""

import threading
import time

import pytest

from arena_core.space.battles import HANDLE_BYTES, BattleBook, BattleError

TTL = 600.0
# What the visitor reads, word for word (regular expressions: the dots escaped).
NO_BATTLE = r"There is no open battle to vote on\. Start a new battle\."
EXPIRED = r"This battle has expired\. Start a new battle\."
ALREADY = r"You already voted on this battle\. Start a new battle\."
NOT_DELIVERED = r"Both outputs must arrive before you vote\."


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def fields(**over):
    base = dict(arena="speech", model_a="m-a", model_b="m-b", prompt="Hello.", prompt_id="p1",
                category="greeting")  # fmt: skip
    return base | over


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def book(clock):
    return BattleBook(TTL, clock=clock)


def test_a_battle_records_what_the_server_chose_and_when(book, clock):
    handle, battle = book.open(**fields())
    # 32 random bytes in URL-safe base64 without padding: ceil(32 * 4 / 3) = 43 characters.
    assert len(handle) == 43 == -(-HANDLE_BYTES * 4 // 3)
    assert set(handle) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert (battle.arena, battle.model_a, battle.model_b) == ("speech", "m-a", "m-b")
    assert (battle.prompt, battle.prompt_id, battle.category) == ("Hello.", "p1", "greeting")
    assert battle.created == 1000.0
    assert not battle.delivered and not battle.voted and battle.delivered_at is None
    assert len(book) == 1


def test_handles_and_battle_ids_are_never_reused(book):
    opened = [book.open(**fields()) for _ in range(200)]
    assert len({h for h, _ in opened}) == 200
    assert len({b.battle_id for _, b in opened}) == 200
    assert len(book) == 200


def test_a_delivered_battle_takes_exactly_one_vote(book, clock):
    handle, battle = book.open(**fields())
    book.delivered(handle)
    assert battle.delivered and battle.delivered_at == clock.now and battle.listen_seconds == 0.0
    assert book.close_for_vote(handle) is battle
    assert battle.voted
    with pytest.raises(BattleError, match=rf"^{ALREADY}$"):
        book.close_for_vote(handle)


@pytest.mark.parametrize("handle", [None, "", "no-such-handle"])
def test_a_vote_without_an_open_battle_is_refused(book, handle):
    book.open(**fields())
    with pytest.raises(BattleError, match=rf"^{NO_BATTLE}$"):
        book.close_for_vote(handle)


def test_a_vote_before_both_outputs_arrived_is_refused(book):
    handle, battle = book.open(**fields())
    with pytest.raises(BattleError, match=rf"^{NOT_DELIVERED}$"):
        book.close_for_vote(handle)
    assert not battle.voted  # a refused vote does not use the battle up
    book.delivered(handle)
    assert book.close_for_vote(handle) is battle


def test_the_listening_gate_opens_at_its_second_and_says_how_long_is_left(book, clock):
    handle, _ = book.open(**fields())
    book.delivered(handle, listen_seconds=7.5)
    clock.now += 2.0  # 5.5 s left: rounded up, never told "0 s"
    with pytest.raises(BattleError, match=r"^Listen to both clips before you vote \(6 s left\)\.$"):
        book.close_for_vote(handle)
    clock.now += 5.0  # 0.5 s left
    with pytest.raises(BattleError, match=r"\(1 s left\)"):
        book.close_for_vote(handle)
    clock.now += 0.5  # exactly at the gate
    assert book.close_for_vote(handle).voted


def test_the_gate_counts_from_delivery_not_from_opening(book, clock):
    handle, _ = book.open(**fields())
    clock.now += 100.0  # generation took long; the visitor still has to listen
    book.delivered(handle, listen_seconds=3)
    clock.now += 2.0
    with pytest.raises(BattleError, match="1 s left"):
        book.close_for_vote(handle)
    clock.now += 1.0
    assert book.close_for_vote(handle).voted


def test_a_negative_listening_time_is_no_gate(book):
    handle, battle = book.open(**fields())
    book.delivered(handle, listen_seconds=-5)
    assert battle.listen_seconds == 0.0
    assert book.close_for_vote(handle) is battle


def test_delivering_an_unknown_battle_changes_nothing(book):
    _, battle = book.open(**fields())
    book.delivered("no-such-handle", listen_seconds=1)
    book.reopen("no-such-handle")
    assert not battle.delivered and len(book) == 1


def test_a_battle_expires_one_tick_after_its_ttl(book, clock):
    first, _ = book.open(**fields())
    second, _ = book.open(**fields())
    book.delivered(first)
    book.delivered(second)
    clock.now += TTL  # exactly the ttl: still open
    assert book.close_for_vote(first).voted
    clock.now += 0.001
    with pytest.raises(BattleError, match=rf"^{EXPIRED}$"):
        book.close_for_vote(second)
    assert len(book) == 1  # the expired battle is dropped; the voted one stays until its ttl
    with pytest.raises(BattleError, match=rf"^{NO_BATTLE}$"):
        book.close_for_vote(second)


def test_opening_drops_every_expired_battle_and_keeps_the_rest(book, clock):
    old = [book.open(**fields())[0] for _ in range(3)]
    clock.now += 100.0
    young = [book.open(**fields())[0] for _ in range(2)]
    clock.now += TTL - 100.0  # the old ones are exactly at their ttl: kept
    book.open(**fields())
    assert len(book) == 6
    clock.now += 0.5  # now past it
    book.open(**fields())
    assert len(book) == 4  # the two young, the one at +ttl, and the new one
    for handle in young:
        book.delivered(handle)
        assert book.close_for_vote(handle).voted
    for handle in old:
        with pytest.raises(BattleError, match=rf"^{NO_BATTLE}$"):
            book.close_for_vote(handle)


def test_reopen_gives_back_a_vote_that_could_not_be_written(book):
    handle, battle = book.open(**fields())
    book.delivered(handle)
    book.close_for_vote(handle)
    book.reopen(handle)
    assert not battle.voted
    assert book.close_for_vote(handle) is battle


def test_racing_votes_on_one_battle_let_exactly_one_through(book):
    handle, _ = book.open(**fields())
    book.delivered(handle)
    barrier, passed, refused = threading.Barrier(16), [], []

    def vote():
        barrier.wait()
        try:
            passed.append(book.close_for_vote(handle))
        except BattleError:
            refused.append(1)

    threads = [threading.Thread(target=vote) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(passed), len(refused)) == (1, 15)


def test_the_default_clock_is_monotonic_time():
    book = BattleBook(TTL)
    handle, battle = book.open(**fields())
    assert abs(battle.created - time.monotonic()) < 60.0  # wall-clock time would be decades off
    book.delivered(handle)
    assert book.close_for_vote(handle) is battle
