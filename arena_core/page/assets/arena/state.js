  // The battle's behaviour in the browser: which clip was heard, one clip at a time,
  // "Play A then B", the vote buttons' lock, and the keyboard shortcuts. Run once by
  // Gradio at page load (launch(js=...)); the players call arena.event(...) through their
  // play/pause/stop events' js hooks. The server's listening gate stays the authority:
  // this only keeps the page honest about what it will accept.
  // Part 1 of 4 (assets.SCRIPT_PARTS, one function's body cut by concern; the parts share
  // its scope): constants, the page's state, the shortcuts' choice and the live region.
  const SIDES = ["A", "B"];
  const VOTE_KEYS = { a: "a", b: "b", t: "tie", x: "both_bad" };
  const KEY_LABELS = { a: "A", b: "B", tie: "T", both_bad: "X" };
  // A clip counts as heard once this share of it has played (at any speed): skipping to
  // the end does not count.
  const HEARD_SHARE = 0.9;
  const LABELS = { idle: "not heard yet", playing: "playing…", heard: "heard ✓" };
  const LOCK = '<svg class="lock" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path fill="currentColor" d="M6 10V8a6 6 0 1 1 12 0v2h1a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V11a1 1 0 0 1 1-1h1zm2 0h8V8a4 4 0 1 0-8 0v2z"/></svg>';
  const st = { heard: { A: false, B: false }, playing: { A: false, B: false }, next: null, battle: "", shownBattle: "", typed: 0, leftNext: false, said: "" };
  // Seconds of each clip played since the battle opened: the media time advanced while
  // playing, summed over played intervals (a replay counts again, a seek does not, and
  // at double speed ten seconds of clip count ten). Sent with the vote; the server keeps
  // it only if plausible and publishes it as the browser's report, not as a fact.
  const played = { A: 0, B: 0 };
  const mark = { A: null, B: null }; // media time at the last reading while playing
  // A step of media time larger than this (seconds, times the speed) between two
  // readings is a jump the events did not announce, not listening.
  const MAX_STEP = 1.5;
  // Milliseconds a seek may take before it is taken for stuck (see unstick).
  const STUCK_MS = 1000;
  const STUCK_TRIES = 3;
  // A screen this narrow (the styles' phone width) stacks everything: a battle opened
  // there is scrolled into view, unless the visitor typed in a text field this recently (ms).
  const NARROW = "(max-width: 640px)";
  const TYPING_MS = 1500;
  // Where the visitor's choice of the single-key shortcuts is kept (WCAG 2.1.4: a key that
  // acts at once must be possible to turn off: a speech-input user's dictated word, or a
  // stray key, otherwise votes). "off" turns them off; anything else, or no storage, is on.
  const KEYS_STORE = "arena-shortcuts";
  // Inputs that take no typing: a key pressed there is a shortcut. (The shortcuts' own
  // switch keeps the focus once clicked, and N or A did nothing there until the visitor
  // clicked elsewhere: shortcuts just turned on seemed broken.)
  const NOT_TYPED = new Set(["checkbox", "radio", "button", "submit", "reset", "range", "color", "file", "image"]);

  const $ = (selector) => document.querySelector(selector);
  const visible = (el) => !!el && el.offsetParent !== null;

  let keysMemory = null; // the choice, where the browser keeps no storage for this page
  function keysOn() {
    let kept = keysMemory;
    try { kept = window.localStorage.getItem(KEYS_STORE) ?? keysMemory; } catch (e) { /* none */ }
    return kept !== "off";
  }
  function setKeys(on) {
    keysMemory = on ? "on" : "off";
    try { window.localStorage.setItem(KEYS_STORE, keysMemory); } catch (e) { /* kept in memory */ }
    showKeys();
    render();
  }
  function showKeys() {
    // The page's words about keys follow the choice: the styles show the gate's "Keys: …"
    // or "Keyboard shortcuts are off…" and hide the "(or P)" hints by this class on <html>
    // (the gate is replaced with each battle; <html> stays), and the switch shows it.
    const on = keysOn();
    document.documentElement.classList.toggle("arena-keys-off", !on);
    const box = $("#keys-switch");
    if (box && box.checked !== on) box.checked = on;
  }

  function say(text) {
    // The page's own polite live region, made once at load and empty until a reveal: a
    // screen reader announces a change in a region it already knows (a region that arrives
    // with its words, like the gate Gradio replaces, is often not read at all).
    let region = document.getElementById("reveal-said");
    if (!region) {
      region = document.createElement("div");
      region.id = "reveal-said";
      region.className = "sr-only";
      region.setAttribute("role", "status");
      region.setAttribute("aria-live", "polite");
      region.setAttribute("aria-atomic", "true");
      document.body.appendChild(region);
    }
    if (region.textContent !== text) region.textContent = text;
  }

  function announce(g) {
    // After a vote the sides show their models, but in no live region: a screen-reader user
    // never heard who they voted for. Once both revealed heads are in (the server sends the
    // names only with a recorded vote: data-name), "A was X, B was Y." is said once for this
    // reveal. Any other stage empties the region, so nothing is said on load, and nothing
    // of a battle lingers into the next (or is said twice: only a change is announced).
    const names = SIDES.map((side) => $(`#side-${side} .side-head.revealed`)?.dataset.name);
    const text = g && g.dataset.stage === "voted" && names.every(Boolean)
      ? `A was ${names[0]}, B was ${names[1]}.` : "";
    if (text !== st.said) {
      st.said = text;
      say(text);
    }
  }
