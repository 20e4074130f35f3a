"""The Leaderboard tab when the visitor is quicker than the server, in Debian's Chromium.

Several events draw the board: the page's load, the tab, each control, an arena followed
from the Arena tab. Whatever order their answers come in, the board shown is the one for the
controls as the visitor last set them. A request to Gradio's queue is held in the browser,
so the order a busy server can give (once seen by hand: "Model" clicked right after the
board's first load, and the Votes table stayed) happens on every run.
"""

import time

import pytest
from browser import LAPTOP, HeldCalls, Visit, expect

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

        def streaming() -> bool:
            return any("/queue/data" in r.url for r in self.visit.pending)

        self._wait(lambda: not streaming(), "the page waits for no answer")
        page.on("request", stream)
        with page.expect_response(lambda r: r.request == self.held[0].request):  # queued
            self.release()
        answered = time.monotonic()

        # Its answer comes on a stream opened for it, which ends with it. Once, on a loaded
        # machine, no new stream was seen in 30 s and none was open: then the page is
        # taken to have its answer once no stream has been open for 3 s.
        def came() -> bool:
            if streaming():
                return False
            if streams:
                return streams[0] not in self.visit.pending
            return time.monotonic() - answered > 3

        self._wait(came, "the held request's answer came")
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


def test_an_arena_followed_from_the_arena_tab_is_kept_when_the_tab_opens(running_app, browser):
    """The visitor picks another arena on the Arena tab and opens the Leaderboard at once.
    The board's arena followed in a request of its own, answered after the Arena tab's header;
    the tab's answer (the arenas offered, with the arena read when it opened: still English)
    landed after it and set English back, with its models in the Model view's picker (seen
    in CI). The board now follows in the page, and the tab's answer sets choices only."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "board-follow-then-tab")
    visit.arrive(running_app.url)
    page = visit.page
    calls = HeldCalls(
        visit,
        # The board's arena following the Arena tab's, where it is a call (until session
        # 31): its only input was the arena, and it carried no event data.
        follow=lambda b: b.get("data") == ["tts-multilingual"] and not b.get("event_data"),
        # The Leaderboard tab's arenas offered, sent with the tab's selection.
        opened=lambda b: (b.get("event_data") or {}).get("value") == "Leaderboard",
    )
    visit.pick("#arena-in", "Multilingual text-to-speech")
    calls.held_within("follow", 5)  # held until the tab's call was sent (the stale order)
    page.get_by_role("tab", name="Leaderboard").click()
    calls.wait_held("opened")
    calls.release_if_held("follow")
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


def drawn_view(request) -> str | None:
    """The view a request to draw the board asks for (its inputs' sixth), else None."""
    data = (request.post_data_json or {}).get("data") or []
    return data[5] if len(data) >= 7 else None


def answered(visit: Visit) -> None:
    """Until the page waits for no answer from Gradio's queue (its stream of answers ends
    when none is pending), then a moment for the page to draw the last one."""
    for _ in range(600):
        if not any("/queue/" in r.url for r in visit.pending):
            visit.page.wait_for_timeout(500)
            return
        visit.page.wait_for_timeout(50)
    raise AssertionError(f"answers still awaited after 30 s: {visit.unended()}")


def on_the_board(browser, url: str, name: str) -> Visit:
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), name)
    visit.arrive(url)
    visit.page.get_by_role("tab", name="Leaderboard").click()
    expect(visit.page.locator("#board-table").locator(VOTES_TABLE)).to_be_attached(timeout=30_000)
    return visit


def test_a_view_clicked_while_the_last_views_controls_are_on_their_way_sets_them(
    running_app, browser
):
    """Model clicked, then Votes before the answer that shows Model's controls came: the
    second click's controls were never asked for (the event's default trigger mode, "once",
    drops a trigger while the event runs), so the Votes table came under Model's controls:
    the model picker shown, Weights, Period and the provisional toggle hidden."""
    visit = on_the_board(browser, running_app.url, "hunt-view-controls")
    page = visit.page
    calls = HeldCalls(visit, model=lambda b: b.get("data") == ["model"])
    views = page.locator("#board-view")
    views.get_by_text("Model", exact=True).click()
    calls.wait_held("model")
    # The page asks for the Votes board once it has passed over the controls' event, and
    # that board is drawn before Model's controls come (else Gradio ran the whole event
    # again once the board was in, and the controls came right by chance).
    with page.expect_request(lambda r: "/queue/join" in r.url and drawn_view(r) == "votes"):
        views.get_by_text("Votes", exact=True).click()
    answered(visit)
    calls.release("model")
    page.unroute(HeldCalls.PATTERN)
    expect(page.locator("#board-table").locator(VOTES_TABLE)).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1000)  # a deferred answer would have come by now
    visit.shot("votes")
    expect(views.get_by_label("Votes")).to_be_checked()
    expect(page.locator("#board-weights")).to_be_visible()
    expect(page.locator("#board-model")).to_be_hidden()


def test_an_arena_picked_on_the_board_stays_when_the_arena_tabs_follows_late(running_app, browser):
    """Multilingual picked on the Arena tab, then Japanese on the board before the board had
    followed (its answer waits behind the Arena tab's header, which reads a board): the
    late answer set the board back to Multilingual, over the visitor's own last pick."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "hunt-follow-late")
    visit.arrive(running_app.url)
    page = visit.page
    # The follow's only input was the arena, and it carried no event data (the tab's call,
    # with the same arena once the board follows in the page, carries the tab's: held, it
    # left the arena's dropdown under Gradio's loading cover, which took the test's clicks).
    calls = HeldCalls(
        visit, follow=lambda b: b.get("data") == ["tts-multilingual"] and not b.get("event_data")
    )
    visit.pick("#arena-in", "Multilingual text-to-speech")
    page.get_by_role("tab", name="Leaderboard").click()
    arena = page.locator("#board-arena input")
    expect(arena).to_be_visible()
    visit.pick("#board-arena", "Japanese text-to-speech")
    caption = page.locator("#board-table caption")
    expect(caption).to_contain_text("Japanese text-to-speech", timeout=30_000)
    if "follow" in calls.held:  # else the board followed before the visitor's pick
        calls.release("follow")
    page.unroute(HeldCalls.PATTERN)
    page.wait_for_timeout(1500)  # a board set back would be drawn by now
    visit.shot("japanese")
    expect(arena).to_have_value("Japanese text-to-speech")
    expect(caption).to_contain_text("Japanese text-to-speech")


def prompt_categories(visit: Visit) -> set[str]:
    """The Prompts filter's options as the visitor reads them (a language without its own
    name in brackets)."""
    page = visit.page
    page.locator("#board-controls input").nth(1).click()  # the Prompts filter
    expect(page.get_by_role("option").first).to_be_visible()
    offered = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return {o.split("\n")[-1].strip().split(" (")[0] for o in offered}


#: The page's unqueued calls at load: none reads more of the page than the board's arena
#: (the load's own categories until session 31, the shared link's answer, the About text).
#: They carry no event data; each is held, under a name of its own.
AT_LOAD = {f"load{k}": lambda b: b.get("data") in ([], ["tts-en"]) and not b.get("event_data")
           for k in range(3)}  # fmt: skip


def release_loads(calls: HeldCalls, *, reading_the_arena: bool) -> None:
    """Release the held load calls that read the board's arena, or those that read nothing."""
    for name, route in list(calls.held.items()):
        if name.startswith("load") and bool(route.request.post_data_json["data"]) == (
            reading_the_arena
        ):
            calls.release(name)


def test_a_shared_link_lists_its_arenas_prompt_categories(running_app, browser):
    """A link to a Multilingual model's page: the Prompts filter offers that arena's
    languages. The page's load listed the first arena's categories in an answer of its own,
    which, landing after the link's arena was switched to, left them under Multilingual; the
    link's answer now carries its arena's categories. The load's calls that read the board's
    arena are held until the link's page is drawn."""
    multilingual = running_app.service.arena("tts-multilingual")
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "board-link-categories")
    page = visit.page
    calls = HeldCalls(visit, **AT_LOAD)
    page.goto(f"{running_app.url}?model={multilingual.models[0].id}")
    calls.wait_held("load0")
    page.wait_for_timeout(1000)  # the load's other calls, sent with the first
    release_loads(calls, reading_the_arena=False)  # the link's own, and the About text
    expect(page.locator("#board-table .model-view")).to_be_visible(timeout=30_000)
    expect(page.locator("#board-arena input")).to_have_value(multilingual.title)
    release_loads(calls, reading_the_arena=True)
    page.unroute(HeldCalls.PATTERN)
    names = prompt_categories(visit)
    assert "All prompts" in names and {"German", "French"} <= names, names
    visit.shot("categories")


def test_an_arena_picked_while_the_page_loads_keeps_its_prompt_categories(running_app, browser):
    """Japanese picked on the Arena tab while the page's load was answered: the load's
    answer, the first arena's categories, landed after Japanese's and listed English's
    under Japanese (Abbreviations, Tongue twisters instead of Polite, Onomatopoeia). The
    categories are now the page's from the start, and only an arena's switch changes them."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "board-load-categories")
    page = visit.page
    calls = HeldCalls(visit, **AT_LOAD)
    page.goto(running_app.url)
    expect(page.locator("#arena-in input")).to_be_visible(timeout=30_000)
    visit.pick("#arena-in", "Japanese text-to-speech")
    page.get_by_role("tab", name="Leaderboard").click()
    expect(page.locator("#board-arena input")).to_have_value("Japanese text-to-speech")
    expect(page.locator("#board-table caption")).to_contain_text("Japanese", timeout=30_000)
    release_loads(calls, reading_the_arena=False)
    release_loads(calls, reading_the_arena=True)
    page.unroute(HeldCalls.PATTERN)
    names = prompt_categories(visit)
    japanese = running_app.service.live["tts-ja"].categories
    assert len(names) == len(japanese) + 1 and "Tongue twisters" not in names, names
    visit.shot("categories")
