"""The Leaderboard tab when the visitor is quicker than the server, in Debian's Chromium.

Several events draw the board: the page's load, the tab, each control, an arena followed
from the Arena tab. Whatever order their answers come in, the board shown is the one for the
controls as the visitor last set them. A request to Gradio's queue is held in the browser,
so the order a busy server can give (once seen by hand: "Model" clicked right after the
board's first load, and the Votes table stayed) happens on every run.
"""

import pytest
from browser import LAPTOP, Visit, expect

pytestmark = pytest.mark.browser

#: The views' keys as the page sends them (board_tab.VIEWS).
VOTES = "votes"
#: The Votes table (by its caption: the model page's tables have the same class).
VOTES_TABLE = "caption:text('Leaderboard of')"


class HeldBoard:
    """The page's request to draw the board of ``arena`` in ``view`` that follows ``skip``
    such requests, held in the browser until released; every other request passes."""

    PATTERN = "**/queue/join*"

    def __init__(self, visit: Visit, *, arena: str = "tts-en", view: str = VOTES, skip: int = 0):
        self.visit, self.arena, self.view, self.skip = visit, arena, view, skip
        self.held: list = []
        visit.page.route(self.PATTERN, self._route)

    def _route(self, route) -> None:
        data = (route.request.post_data_json or {}).get("data") or []
        # The board's inputs: arena, prompts, weights, period, provisional, view, model, ...
        drawn = len(data) >= 7 and data[0] == self.arena and data[5] == self.view
        if drawn and not self.held and self.skip:
            self.skip -= 1
        elif drawn and not self.held:
            self.held.append(route)
            return
        route.continue_()

    def wait_held(self) -> None:
        self._wait(lambda: self.held, "the page sent a request to draw the board")

    def wait_passed(self) -> None:
        self._wait(lambda: not self.skip, "the requests to let pass were sent")

    def release(self) -> None:
        """Let the held request go on (before unroute: Playwright would count it handled)."""
        self.held[0].continue_()
        self.visit.page.unroute(self.PATTERN)

    def release_and_wait_answered(self) -> None:
        """Release the held request once the page waits for no other answer, and return when
        its answer is in the page: Gradio closes a session's stream of answers when none is
        pending, so the stream opened for this one ends with it."""
        page, streams = self.visit.page, []

        def stream(request) -> None:
            if "/queue/data" in request.url:
                streams.append(request)

        self._wait(lambda: not any("/queue/data" in r.url for r in self.visit.pending),
                   "the page waits for no answer")  # fmt: skip
        page.on("request", stream)
        self.release()
        self._wait(lambda: streams and streams[0] not in self.visit.pending,
                   "the held request's answer came")  # fmt: skip
        page.remove_listener("request", stream)
        page.wait_for_timeout(500)  # the page draws what the stream brought

    def _wait(self, done, what: str) -> None:
        for _ in range(600):
            if done():
                return
            self.visit.page.wait_for_timeout(50)
        raise AssertionError(f"not so after 30 s: {what}; open: {self.visit.unended()}")


def leaderboard(browser, url: str, name: str) -> tuple[Visit, HeldBoard]:
    """A visitor on the Leaderboard tab, the tab's first board held (the page's load drew
    one before it, which passes)."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), name)
    held = HeldBoard(visit, skip=1)
    visit.arrive(url)
    # The load's own request first: clicked before it, the tab's would pass as the load's.
    held.wait_passed()
    visit.page.get_by_role("tab", name="Leaderboard").click()
    held.wait_held()
    return visit, held


def shows_the_model_page(visit: Visit) -> None:
    table = visit.page.locator("#board-table")
    expect(table.locator(".model-view")).to_be_visible(timeout=30_000)
    expect(table.locator(VOTES_TABLE)).to_have_count(0)
    expect(visit.page.locator("#board-view").get_by_label("Model")).to_be_checked()


def test_the_boards_first_load_answered_late_leaves_the_model_page(running_app, browser):
    """The page's load draws the board (for a shared link to a model's page, else the
    Votes table); held until the visitor opened the tab and clicked "Model", its Votes table
    replaced the model page under "Model"."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "board-late-load")
    held = HeldBoard(visit)  # before the page loads: its load's board is the first
    visit.arrive(running_app.url)
    held.wait_held()
    page, table = visit.page, visit.page.locator("#board-table")
    page.get_by_role("tab", name="Leaderboard").click()
    expect(table.locator(VOTES_TABLE)).to_be_attached(timeout=30_000)
    page.locator("#board-view").get_by_text("Model").click()
    expect(table.locator(".model-view")).to_be_visible(timeout=30_000)
    held.release_and_wait_answered()
    visit.shot("model")
    shows_the_model_page(visit)


def test_the_model_page_clicked_while_the_board_is_drawn_comes(running_app, browser):
    """The Model view clicked while the tab's first board was on its way: Gradio dropped the
    click (an event's default is to ignore triggers while it runs), so the Votes table came,
    under "Model", and stayed."""
    visit, held = leaderboard(browser, running_app.url, "board-model-while-drawn")
    visit.page.locator("#board-view").get_by_text("Model").click()
    held.release()
    shows_the_model_page(visit)
    visit.shot("model")


def test_an_arena_picked_while_the_board_is_drawn_is_the_one_shown(running_app, browser):
    """Another arena picked while the tab's first board (English) was on its way: the
    Multilingual board was drawn, then the English one, answered late, replaced it."""
    visit, held = leaderboard(browser, running_app.url, "board-arena-while-drawn")
    visit.pick("#board-arena", "Multilingual text-to-speech")
    caption = visit.page.locator("#board-table caption")
    expect(caption).to_contain_text("Multilingual text-to-speech", timeout=30_000)
    held.release_and_wait_answered()
    visit.shot("multilingual")
    expect(caption).to_contain_text("Multilingual text-to-speech")
    expect(visit.page.locator("#board-arena input")).to_have_value("Multilingual text-to-speech")


class HeldCalls:
    """The page's first direct (unqueued) call each of ``wanted``'s tests accepts (by the
    call's body), held in the browser until released; every other call passes. One route
    for all: Playwright lets a held request go when its route is removed."""

    PATTERN = "**/run/predict*"

    def __init__(self, visit: Visit, **wanted):
        self.visit, self.wanted, self.held = visit, wanted, {}
        visit.page.route(self.PATTERN, self._route)

    def _route(self, route) -> None:
        body = route.request.post_data_json or {}
        for name, test in self.wanted.items():
            if name not in self.held and test(body):
                self.held[name] = route
                return
        route.continue_()

    def wait_held(self, name: str) -> dict:
        """The body of the call ``name``, once the page sent it."""
        for _ in range(600):
            if name in self.held:
                return self.held[name].request.post_data_json
            self.visit.page.wait_for_timeout(50)
        raise AssertionError(f"not sent after 30 s: {name}; open: {self.visit.unended()}")

    def release(self, name: str) -> None:
        """Let the held call go on and return once its answer is in the page."""
        route = self.held[name]
        with self.visit.page.expect_response(lambda r: r.request == route.request):
            route.continue_()
        self.visit.page.wait_for_timeout(500)  # the page applies the answer


def test_an_arena_followed_from_the_arena_tab_is_kept_when_the_tab_opens(running_app, browser):
    """The visitor picks another arena on the Arena tab and opens the Leaderboard before the
    board's arena has followed: the tab's own answer (the arenas offered, read while the
    board still held English) landed after the arena followed and set English back, with its
    models in the Model view's picker (seen in CI)."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "board-follow-then-tab")
    visit.arrive(running_app.url)
    page = visit.page
    calls = HeldCalls(
        visit,
        # The board's arena following the Arena tab's: the handler's only input is the arena.
        follow=lambda b: b.get("data") == ["tts-multilingual"] and not b.get("event_data"),
        # The Leaderboard tab's arenas offered, sent with the tab's selection.
        opened=lambda b: (b.get("event_data") or {}).get("value") == "Leaderboard",
    )
    visit.pick("#arena-in", "Multilingual text-to-speech")
    calls.wait_held("follow")
    page.get_by_role("tab", name="Leaderboard").click()
    assert calls.wait_held("opened")["data"] == ["tts-en"]  # read before the arena followed
    calls.release("follow")
    arena = page.locator("#board-arena input")
    expect(arena).to_have_value("Multilingual text-to-speech")
    calls.release("opened")
    page.unroute(HeldCalls.PATTERN)
    caption = page.locator("#board-table caption")
    expect(caption).to_contain_text("Multilingual text-to-speech", timeout=30_000)
    page.wait_for_timeout(1000)  # an English board would follow a reverted arena
    visit.shot("multilingual")
    expect(arena).to_have_value("Multilingual text-to-speech")
    expect(caption).to_contain_text("Multilingual text-to-speech")
