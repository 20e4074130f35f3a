"""Every new clip starts at its beginning, in Debian's Chromium.

Gradio keeps each player's position bound from one battle to the next: a new clip started
where the last one stopped, so "Play A then B" played B from the middle,
B stayed "not heard yet" and the listening report sent with the vote understated. The same
after another arena was picked.
"""

import itertools

import pytest
from browser import LAPTOP, MEDIA, Visit, battle_opened, expect

pytestmark = pytest.mark.browser

#: A short sentence, then a longer one: the second battle's clips are longer than where
#: the first ones stopped.
FIRST = "Hi there."
SECOND = "The museum's newest wing took nearly a decade to complete and houses old maps."
#: Each player's position and length, in seconds.
POSITIONS = (
    f"() => ['A', 'B'].map(s => {{ const a = ({MEDIA})(s); return [a.currentTime, a.duration]; }})"
)


def played_to_the_end_then_voted(visit: Visit) -> None:
    page = visit.page
    visit.listen_to_both()
    page.wait_for_function(f"() => ['A', 'B'].every(s => ({MEDIA})(s).paused)")
    assert all(now > 0.5 for now, _ in page.evaluate(POSITIONS))  # both stopped at their end
    visit.key("a")
    expect(page.locator("#next-battle")).to_be_visible(timeout=20_000)


def assert_both_at_start_then_heard(visit: Visit, what: str) -> None:
    page = visit.page
    visit.battle_ready()
    page.wait_for_timeout(500)  # a player that restores its old position has done so by now
    assert [round(now, 2) for now, _ in page.evaluate(POSITIONS)] == [0, 0]
    # Nothing seeked the new clips away from 0 either (Gradio's seek to where the last clip
    # stopped, then the page's back to 0, was the overlap that could stick).
    seeks = [e for e in visit.media_log() if e[1] in ("A", "B") and e[2].startswith("currentTime=")]
    assert all(float(e[2].split("=")[1]) == 0 for e in seeks), seeks
    visit.shot(f"{what}-ready")
    # One "Play A then B" hears both (listen_to_both allows a second try only for a machine
    # that skipped part of a fast clip; here the first must do).
    visit.speed_up()
    visit.key("p")
    expect(page.locator('#gate .gate[data-ready="yes"]')).to_be_attached(timeout=40_000)
    for side in "AB":
        expect(page.locator(f"#side-{side} .side-state")).to_have_text("heard ✓")
    report = page.evaluate("() => JSON.parse(window.arena.listened())")
    durations = [length for _, length in page.evaluate(POSITIONS)]
    assert report["a"] >= 0.9 * durations[0] and report["b"] >= 0.9 * durations[1]
    visit.shot(f"{what}-heard")


def test_the_next_battle_and_another_arena_start_both_clips_at_zero(running_app, browser):
    visit = Visit(browser.new_page(viewport=LAPTOP, locale="en-US"), "clip-start")
    page = visit.page
    visit.arrive(running_app.url)
    prompt = page.locator("#prompt-in textarea")
    prompt.fill(FIRST)
    visit.key("n")
    visit.battle_ready()
    played_to_the_end_then_voted(visit)
    prompt.fill(SECOND)
    visit.media_log()  # from here on: the next battle's
    visit.key("n")
    assert_both_at_start_then_heard(visit, "next-battle")
    # Leave for another arena and come back: the players are emptied, then loaded again.
    visit.key("b")
    expect(page.locator("#next-battle")).to_be_visible(timeout=20_000)
    prompt.fill(FIRST)
    visit.key("n")
    visit.battle_ready()
    played_to_the_end_then_voted(visit)
    visit.pick("#arena-in", "Multilingual text-to-speech")
    expect(page.locator('#gate .gate[data-stage="idle"]')).to_be_visible()
    visit.pick("#arena-in", "English text-to-speech")
    prompt.fill(SECOND)
    visit.media_log()
    visit.key("n")
    assert_both_at_start_then_heard(visit, "arena-switch")
    page.close()


def battle_open(running_app, browser, name: str) -> Visit:
    """A visitor's page with a battle of the longer sentence open, its clips settled."""
    visit = battle_opened(browser, running_app.url, name, SECOND)
    visit.page.wait_for_timeout(800)
    return visit


def test_a_skip_worked_from_the_keyboard_is_the_visitors_own_seek(running_app, browser):
    """A new clip is rewound while unplayed, but the visitor's own seek is kept: a skip
    button pressed with Enter fires no pointerdown, and the next render undid it."""
    visit = battle_open(running_app, browser, "clip-keyboard-skip")
    page = visit.page
    page.locator('#audio-A button[aria-label*="forward" i]').first.focus()
    page.keyboard.press("Enter")
    page.wait_for_timeout(800)  # three render ticks
    assert page.evaluate(f"() => ({MEDIA})('A').currentTime") > 0.5
    page.close()


#: Gradio's seeks as a new clip loads, forced on every clip, right after it can play (a busy
#: machine's timing in CI): its player's stop (pause, seek to 0), then the seek back to where
#: the last clip stopped, here the clip's end. Two seeks under way at once now and then left
#: Chromium's player seeking for good, and the clip never played.
OVERLAPPING_SEEKS = """(() => {
  const seen = new WeakSet();
  const P = HTMLMediaElement.prototype;
  const src = Object.getOwnPropertyDescriptor(P, "src");
  Object.defineProperty(P, "src", { ...src, set(value) {
    src.set.call(this, value);
    const a = this;
    if (seen.has(a) || !String(value).startsWith("blob:")) return;
    seen.add(a);
    a.addEventListener("canplaythrough", () => setTimeout(() => {
      a.pause(); a.currentTime = 0; a.currentTime = a.duration;
    }, 5), { once: true });
  } });
})()"""


def test_a_clip_whose_player_stays_seeking_is_asked_again_and_plays(running_app, browser):
    """The page asks a seek under way for more than a second again (assets/arena/clips.js ``unstick``).
    Without that, this test failed in 3 of 5 runs here (each run is six battles)."""
    page = browser.new_page(viewport=LAPTOP, locale="en-US")
    page.add_init_script(OVERLAPPING_SEEKS)
    visit = Visit(page, "clip-stuck-seek")
    visit.arrive(running_app.url)
    for text in (FIRST, SECOND) * 3:
        page.locator("#prompt-in textarea").fill(text)
        visit.key("n")
        visit.battle_ready()
        visit.listen_to_both()
        visit.key("a")
        expect(page.locator("#next-battle")).to_be_visible(timeout=20_000)
    page.close()


def test_a_seek_under_way_for_over_a_second_is_asked_again_three_times_at_most(
    running_app, browser
):
    """The watchdog's rule, on a seek that never ends (the element says it is seeking):
    asked again after a second, then after each further second, three times in all, at
    the position it was going to; then left alone (a seek that truly takes that long is not
    kept from ending by a new one every second)."""
    visit = battle_open(running_app, browser, "clip-seek-watchdog")
    page = visit.page
    visit.media_log()
    # The element seeks for ever: it says it is seeking, and a seek asked of it is only noted.
    page.evaluate(
        f"""() => {{ const a = ({MEDIA})('A'); window.__asked = [];
        Object.defineProperty(a, 'seeking', {{ get: () => true, configurable: true }});
        Object.defineProperty(a, 'currentTime', {{ get: () => 0.75, configurable: true,
          set: (v) => window.__asked.push([performance.now(), v]) }}); }}"""
    )
    page.wait_for_timeout(5500)
    asked = page.evaluate("() => window.__asked")
    assert [position for _, position in asked] == [0.75] * 3
    assert all(later - earlier >= 950 for (earlier, _), (later, _) in itertools.pairwise(asked))
    assert sum("asked again" in line for line in visit.console) == 3
    page.close()
