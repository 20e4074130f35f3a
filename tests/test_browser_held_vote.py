"""A vote the server's listening gate holds back, in Debian's Chromium.

The server refuses a vote until the clips' playing time has passed since the battle opened
(``listen_share``). A visitor who listened fast and voted saw the gate count down, then
"Both clips heard: your vote, please" with an empty status line: the vote pressed was not
recorded and nothing said so. Now the page says the vote is held and sends it by itself
when the countdown ends, to the battle it was pressed on, and never to a later one.
"""

import re

import pytest
from browser import GATE_SHARE, LAPTOP, Visit, expect

from arena_core.votes.read import read_votes

pytestmark = pytest.mark.browser

SHORT = "The kettle is already boiling."


def votes_logged(running_app) -> int:
    return read_votes(running_app.settings.votes_dir).table.num_rows


@pytest.fixture
def gated(running_app):
    running_app.service.listen_share = GATE_SHARE
    yield running_app
    running_app.service.listen_share = 0.0


def vote_too_soon(gated, browser, name: str) -> tuple[Visit, int]:
    """A battle listened to at four times and voted A at once: the server holds the vote.
    The visit, and the votes logged before it."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), name)
    visit.arrive(gated.url)
    visit.page.locator("#prompt-in textarea").fill(SHORT)
    visit.key("n")
    visit.battle_ready()
    visit.listen_to_both()
    before = votes_logged(gated)
    visit.key("a")
    expect(visit.page.locator("#gate .gate")).to_have_attribute(
        "data-ready", "wait", timeout=20_000
    )
    return visit, before


def seconds_left(gate) -> int:
    return int(re.search(r"sent in (\d+) s", gate.inner_text())[1])


def test_a_held_vote_is_announced_and_sent_when_voting_opens(gated, browser):
    visit, before = vote_too_soon(gated, browser, "held-vote")
    page = visit.page
    gate = page.locator("#gate .gate")
    expect(page.locator("#status")).to_contain_text("not recorded yet")
    expect(gate).to_contain_text("A is better")
    first = seconds_left(gate)
    visit.shot("held")
    visit.key("b")  # changed their mind while it is held: B goes instead
    expect(gate).to_contain_text("B is better")
    page.wait_for_timeout(1100)
    assert seconds_left(gate) < first
    assert votes_logged(gated) == before
    # Sent by itself once the countdown ends: the reveal, with B's side picked.
    expect(page.locator("#side-B .side-head.picked")).to_be_visible(timeout=(first + 10) * 1000)
    expect(page.locator("#next-battle")).to_be_visible()
    assert votes_logged(gated) == before + 1
    assert read_votes(gated.settings.votes_dir).table.column("vote").to_pylist()[-1] == "b"
    visit.shot("sent")
    page.close()


def test_a_held_vote_never_goes_to_the_next_battle(gated, browser):
    visit, before = vote_too_soon(gated, browser, "held-vote-left")
    page = visit.page
    first = seconds_left(page.locator("#gate .gate"))
    visit.key("n")  # the visitor moves on: the held vote is dropped with its battle
    visit.battle_ready()
    page.wait_for_timeout((first + 3) * 1000)
    assert votes_logged(gated) == before
    expect(page.locator('#gate .gate[data-stage="open"]')).to_be_visible()
    expect(page.locator("#side-A .side-state")).to_be_visible()  # still blind
    expect(page.locator("#status")).not_to_contain_text("not recorded")
    page.close()


def test_a_held_vote_is_dropped_when_new_battle_is_pressed_not_when_it_arrives(gated, browser):
    """New battle's answer replaces the gate, but the page's render ticks go on during that
    round trip: a tick after the wait ended sent the held vote after the visitor moved on.
    Here the answer is held in the browser until well past the wait."""
    visit, before = vote_too_soon(gated, browser, "held-vote-moved-on")
    page = visit.page
    first = seconds_left(page.locator("#gate .gate"))
    held = []
    page.route("**/run/**", lambda route: held.append(route))
    page.locator("#new-battle").click()
    page.wait_for_timeout((first + 3) * 1000)  # the wait is over; the old gate is still up
    assert votes_logged(gated) == before
    for route in held:
        route.continue_()
    page.unroute("**/run/**")
    visit.battle_ready()
    page.wait_for_timeout(1000)
    assert votes_logged(gated) == before
    page.close()
