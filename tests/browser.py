"""Shared by the browser tests: Debian's Chromium through Playwright, screenshots, and the
few page actions every visit needs (wait for a battle, listen quickly, check names).

scripts/test.sh installs Chromium and sets ARENA_REQUIRE_BROWSER=1, so there a
missing browser fails the run instead of skipping it.
"""

import os
import shutil
import time
from pathlib import Path

import pytest

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
#: Seconds any expectation waits: Playwright's 5 s default was missed under a machine's full
#: load (a page's first header took longer to arrive). A passing expectation still returns
#: as soon as it holds; only a failing one waits this long.
expect.set_options(timeout=15_000)
#: Milliseconds a page's first content may take: its header comes from the server on load.
PAGE_LOAD = 30_000

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Flags for a headless Chromium on a machine with no network but loopback.
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]  # fmt: skip
#: Where each step's full-page screenshot goes (git-ignored), for a reviewer to look at.
SCREENSHOTS = Path(__file__).resolve().parent / "output" / "screenshots"
#: Playback speed of the clips in tests: "heard" counts the share of a clip that played,
#: whatever the speed, so the page treats a fast listen like a slow one. (At eight times,
#: a busy machine skipped parts of clips.)
FAST = 4.0
#: The server's listening gate in the tests that need it shut (``service.listen_share``): the
#: clips' length eight times, longer than a listen at ``FAST`` takes even on a loaded machine
#: (at three times, a run at load 11 voted after the gate's 11 s had passed, so the vote was
#: taken and the gate never shown; at six, a slow listen came within a few seconds of it).
GATE_SHARE = 8.0
#: A laptop screen, and a phone (iPhone 12-15 width).
LAPTOP = {"width": 1366, "height": 800}
PHONE = {"width": 390, "height": 844}

#: The clip's <audio> element of one side (Gradio's waveform player keeps it in a shadow root).
MEDIA = """side => { const box = document.getElementById("audio-" + side);
  for (const el of box.querySelectorAll("*")) { const a = el.shadowRoot && el.shadowRoot.querySelector("audio");
    if (a) return a; } return null; }"""


#: Run in the page before its own scripts: the last media events and calls of every audio
#: element, shadow roots included (media events do not leave them), for a failing test's
#: message. Each element gets a number; a line is [ms, element, what, time, readyState,
#: networkState, paused, the source's tail].
MEDIA_LOG = """(() => {
  const log = window.__media = [];
  const ids = new WeakMap();
  let next = 0;
  window.__mediaId = (el) => ids.get(el);
  const note = (el, what) => {
    if (!ids.has(el)) ids.set(el, ++next);
    log.push([Math.round(performance.now()), ids.get(el), what, +el.currentTime.toFixed(3),
      el.readyState, el.networkState, el.paused, (el.currentSrc || el.src || "").slice(-12)]);
    if (log.length > 400) log.splice(0, 100);
  };
  const EVENTS = ["loadstart", "loadedmetadata", "loadeddata", "canplay", "canplaythrough",
    "play", "playing", "pause", "ended", "seeking", "seeked", "waiting", "stalled", "suspend",
    "emptied", "abort", "error"];
  const watch = (el) => {
    if (ids.has(el)) return;
    note(el, "seen");
    for (const kind of EVENTS) el.addEventListener(kind, () => note(el, kind));
  };
  const P = HTMLMediaElement.prototype;
  for (const name of ["play", "pause", "load"]) {
    const call = P[name];
    P[name] = function (...args) { watch(this); note(this, name + "()"); return call.apply(this, args); };
  }
  for (const name of ["src", "currentTime"]) {
    const d = Object.getOwnPropertyDescriptor(P, name);
    Object.defineProperty(P, name, { ...d, set(v) {
      watch(this); note(this, `${name}=${typeof v === "number" ? v.toFixed(3) : String(v).slice(-12)}`);
      d.set.call(this, v); } });
  }
})()"""


def launch_chromium(playwright):
    """Debian's Chromium, or a skip (a failure where ARENA_REQUIRE_BROWSER is set)."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("ARENA_REQUIRE_BROWSER"):
            pytest.fail("Chromium is required here but /usr/bin/chromium is missing")
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


class Visit:
    """One visitor's page, numbering the screenshots it saves."""

    def __init__(self, page, name: str):
        self.page, self.name, self.step = page, name, 0
        # The browser's errors and warnings (a player's load error among them), for a
        # failing test's message.
        self.console: list[str] = []
        page.on("console", self._console)
        page.add_init_script(MEDIA_LOG)
        # Requests the browser sent and has not seen end, with when each was sent: a clip
        # that stops loading says what else held the browser's connections.
        self.pending: dict = {}
        page.on("request", lambda r: self.pending.__setitem__(r, time.monotonic()))
        page.on("requestfinished", lambda r: self.pending.pop(r, None))
        page.on("requestfailed", lambda r: self.pending.pop(r, None))
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for old in SCREENSHOTS.glob(f"{name}-*.png"):  # a reviewer sees this run's steps only
            old.unlink()

    def unended(self) -> list[str]:
        """The requests still open, oldest first: age in seconds, method, path, headers."""
        now = time.monotonic()
        return [
            f"{now - sent:.1f}s {r.method} {r.url.split('/', 3)[-1][-70:]} "
            f"{r.headers.get('range', '')}"
            for r, sent in sorted(self.pending.items(), key=lambda item: item[1])
        ]

    def _console(self, message) -> None:
        if message.type in ("error", "warning"):
            self.console.append(f"{message.type}: {message.text}"[:300])

    def shot(self, what: str) -> Path:
        self.step += 1
        path = SCREENSHOTS / f"{self.name}-{self.step:02d}-{what}.png"
        self.page.screenshot(path=path, full_page=True)
        return path

    def arrive(self, url: str) -> None:
        """Open the page and wait for its arena header, which the server sends on load."""
        self.page.goto(url)
        expect(self.page.locator("#arena-header")).to_contain_text(
            "English text-to-speech", timeout=PAGE_LOAD
        )

    def key(self, key: str) -> None:
        """Press a shortcut with the focus on the page, not in a text field."""
        self.page.evaluate("() => document.activeElement && document.activeElement.blur()")
        self.page.keyboard.press(key)

    def battle_ready(self, timeout: float = 90_000) -> None:
        """Wait until a battle is open and both clips are loaded in their players."""
        self.page.locator('#gate .gate[data-stage="open"]').wait_for(timeout=timeout)
        self.page.wait_for_function(
            f"() => ['A', 'B'].every(s => {{ const a = ({MEDIA})(s); "
            "return a && a.readyState >= 1 && a.duration > 0; })",
            timeout=30_000,
        )

    def speed_up(self, rate: float = FAST) -> None:
        self.page.evaluate(
            f"rate => ['A', 'B'].forEach(s => {{ const a = ({MEDIA})(s); "
            "a.defaultPlaybackRate = rate; a.playbackRate = rate; })",
            rate,
        )

    def paused(self, side: str) -> bool:
        return self.page.evaluate(f"s => ({MEDIA})(s).paused", side)

    def listen_to_both(self) -> int:
        """Play A then B (the P key), fast, until the page says both were heard; returns how
        many times they were played."""
        ready = self.page.locator('#gate .gate[data-ready="yes"]')
        for attempt in range(2):
            self.speed_up()
            self.key("p")
            try:
                ready.wait_for(timeout=20_000)
                return attempt + 1
            except sync_api.TimeoutError as timeout:
                # A loaded machine may skip part of a fast clip, which then does not count
                # as heard (as for a visitor who skips): listen once more.
                if attempt:
                    raise AssertionError(
                        f"both clips not heard after two tries: {self.diagnosis()}"
                    ) from timeout

    def diagnosis(self) -> str:
        """What the page believed about its clips, the browser's last errors, the requests
        still open and the media's last events (a closed or crashed page says so)."""
        try:
            state, media = self.page.evaluate(
                "() => [window.arena.state(), window.__media.slice(-60)]"
            )
        except sync_api.Error as error:
            state, media = f"(page not readable: {error})", []
        return (
            f"{state}; the browser's last errors: {self.console[-8:]}; "
            f"requests not ended: {self.unended()}; the media's last events: {media}"
        )

    def media_log(self) -> list:
        """The media events and calls logged since the last read (MEDIA_LOG's lines), the
        clips now in the players named "A" and "B" instead of by number."""
        return self.page.evaluate(
            f"""() => {{ const now = {{}};
              for (const s of ['A', 'B']) {{ const a = ({MEDIA})(s); if (a) now[window.__mediaId(a)] = s; }}
              return window.__media.splice(0).map(e => [e[0], now[e[1]] || e[1], ...e.slice(2)]); }}"""
        )

    def pick(self, dropdown: str, option: str) -> None:
        """Choose ``option`` in the dropdown with id ``dropdown``."""
        self.page.locator(f"{dropdown} input").click()
        self.page.get_by_role("option", name=option, exact=True).click()

    def arena_html(self) -> str:
        """Everything the Arena tab holds, attributes included (sources, links, titles)."""
        return self.page.locator("#arena-tab").evaluate("e => e.outerHTML")


def battle_opened(browser, url: str, name: str, prompt: str) -> Visit:
    """A visitor's laptop page with a battle of ``prompt`` open and both clips loaded."""
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), name)
    visit.arrive(url)
    visit.page.locator("#prompt-in textarea").fill(prompt)
    visit.key("n")
    visit.battle_ready()
    return visit


def names_and_ids(service, arena_id: str) -> set[str]:
    arena = service.registry.arena(arena_id)
    return {m.id for m in arena.models} | {m.name for m in arena.models}


#: Controls a visitor can reach, and a rough accessible name for each (ARIA label, label
#: element, text, title): enough to find a control that a screen reader could not name.
UNNAMED_CONTROLS = """() => {
  const controls = "button, input, select, textarea, a[href], [role=button], [role=tab], " +
    "[role=radio], [role=checkbox], [role=listbox], [role=combobox], [role=slider]";
  const name = (el) => {
    const aria = (el.getAttribute("aria-label") || "").trim();
    if (aria) return aria;
    const by = el.getAttribute("aria-labelledby");
    if (by) return by.split(/\\s+/).map((id) => document.getElementById(id)?.textContent || "").join(" ").trim();
    if (el.labels && el.labels.length) return [...el.labels].map((l) => l.textContent).join(" ").trim();
    if (!["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName)) {
      const text = (el.innerText || el.textContent || "").trim();
      if (text) return text;
    }
    return (el.getAttribute("title") || "").trim();
  };
  const shown = (el) => { const r = el.getBoundingClientRect(); const cs = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && cs.visibility !== "hidden" && el.type !== "hidden"; };
  return [...document.querySelectorAll(controls)].filter(shown).filter((el) => !name(el))
    .map((el) => el.outerHTML.slice(0, 160));
}"""


class HeldCalls:
    """The page's first direct (unqueued) call each of ``wanted``'s tests accepts (by the
    call's body), held in the browser until released; every other call passes. One route
    for all: Playwright lets a held request go when its route is removed. With ``served``,
    the server answers a held call at once and only its answer is held (the server has
    moved on, the page has not yet)."""

    PATTERN = "**/run/predict*"

    def __init__(self, visit: Visit, *, served: bool = False, **wanted):
        self.visit, self.wanted, self.served = visit, wanted, served
        self.held, self.answers = {}, {}
        visit.page.route(self.PATTERN, self._route)

    def _route(self, route) -> None:
        body = route.request.post_data_json or {}
        for name, test in self.wanted.items():
            if name not in self.held and test(body):
                if self.served:
                    self.answers[name] = route.fetch()
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

    def held_within(self, name: str, seconds: float) -> bool:
        """Whether the page sends the call ``name`` within ``seconds`` (held if so)."""
        for _ in range(int(seconds * 20)):
            if name in self.held:
                return True
            self.visit.page.wait_for_timeout(50)
        return name in self.held

    def release_if_held(self, name: str) -> None:
        """:meth:`release` the call ``name`` if the page sent it (a call some versions of
        the page make and others do not: a test of a race holds it where it exists)."""
        if name in self.held:
            self.release(name)

    def release(self, name: str) -> None:
        """Let the held call go on and return once its answer is in the page."""
        route, answer = self.held[name], self.answers.get(name)
        with self.visit.page.expect_response(lambda r: r.request == route.request):
            if answer:
                route.fulfill(response=answer)
            else:
                route.continue_()
        self.visit.page.wait_for_timeout(500)  # the page applies the answer
