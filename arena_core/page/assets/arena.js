() => {
  // The battle's behaviour in the browser: which clip was heard, one clip at a time,
  // "Play A then B", the vote buttons' lock, and the keyboard shortcuts. Run once by
  // Gradio at page load (launch(js=...)); the players call arena.event(...) through their
  // play/pause/stop events' js hooks. The server's listening gate stays the authority:
  // this only keeps the page honest about what it will accept.
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

  function media(side) {
    // The clip's <audio> element: Gradio's waveform player keeps it in a shadow root.
    const box = document.getElementById("audio-" + side);
    if (!box) return null;
    for (const el of box.querySelectorAll("*")) {
      const found = el.shadowRoot && el.shadowRoot.querySelector("audio");
      if (found) return found;
    }
    return null;
  }

  function playedSeconds(audio) {
    // Media seconds the element has played, by its own record (a replay is not counted
    // twice there: the ranges merge).
    let seconds = 0;
    for (let i = 0; i < audio.played.length; i++) seconds += audio.played.end(i) - audio.played.start(i);
    return seconds;
  }

  function playedShare(audio) {
    if (!audio || !isFinite(audio.duration) || audio.duration <= 0) return 1;
    return playedSeconds(audio) / audio.duration;
  }

  function advance(side, audio) {
    const now = audio.currentTime;
    const step = now - mark[side];
    if (mark[side] !== null && step > 0 && step <= MAX_STEP * Math.max(1, audio.playbackRate)) {
      played[side] += step;
    }
    mark[side] = audio.paused || audio.seeking ? null : now;
  }

  function watch(side) {
    // Follow the clip's media element once (Gradio may replace it between battles).
    const box = document.getElementById("audio-" + side);
    if (box && !box.arenaWatched) {
      // A press on the waveform or a skip button is the visitor's own seek: kept. (Not
      // the play button: a clip played from there starts at 0 like any new clip.)
      box.arenaWatched = true;
      // "click" too: a skip button worked from the keyboard fires no pointerdown, and its
      // seek was undone by the next render.
      const own = (event) => {
        const onPlay = event.composedPath().some((el) => el.classList && el.classList.contains("play-pause-button"));
        const audio = media(side);
        if (audio && !onPlay) audio.arenaFresh = false;
      };
      box.addEventListener("pointerdown", own);
      box.addEventListener("click", own, true);
    }
    const audio = media(side);
    if (!audio || audio.arenaWatched) return;
    audio.arenaWatched = true;
    // Gradio's player may make its element only once asked to play, and the render that
    // finds it can come a quarter second later: what it played before then counts too.
    played[side] += playedSeconds(audio);
    mark[side] = audio.paused || audio.seeking ? null : audio.currentTime;
    const start = () => { mark[side] = audio.currentTime; };
    // "play" marks where playback starts; "playing" (after buffering) only if nothing did:
    // on a busy machine its event can arrive after the clip has already advanced, and
    // marking there again dropped that first stretch from the seconds played.
    audio.addEventListener("play", start);
    audio.addEventListener("playing", () => { if (mark[side] === null) start(); });
    audio.addEventListener("seeked", () => { if (!audio.paused) start(); });
    audio.addEventListener("seeking", () => { mark[side] = null; audio.arenaSeek = performance.now(); });
    audio.addEventListener("seeked", () => { audio.arenaSeek = 0; audio.arenaTries = 0; });
    audio.addEventListener("emptied", () => { mark[side] = null; audio.arenaFresh = true; });
    // A new clip starts at its beginning: Gradio keeps each player's position bound from
    // one clip to the next and seeked a new clip to where the last one stopped (the server
    // now sets it to 0 with each battle; this stays for any other seek of a new clip).
    audio.arenaFresh = audio.played.length === 0;
    for (const kind of ["loadstart", "loadedmetadata", "canplay", "seeked"]) {
      audio.addEventListener(kind, () => {
        if (kind === "loadstart") audio.arenaFresh = true;
        rewind(audio);
      });
    }
    audio.addEventListener("play", () => { audio.arenaFresh = false; });
    // A clip asked to play before its player was ready: Gradio's waveform player stops it
    // (a pause and a seek to 0) once it has loaded the clip, so on a slow network "Play A
    // then B" said "playing…" while the clip loaded, then nothing played. The stop's seek
    // ends paused at 0 while the wish stands: the clip is started again then. The visitor's
    // own pause (no seek under way), the clip's end or another clip drops the wish.
    audio.addEventListener("seeked", () => {
      if (audio.arenaWanted && audio.paused && audio.currentTime === 0) {
        audio.arenaWanted = false;
        audio.play();
      }
    });
    audio.addEventListener("pause", () => { if (!audio.seeking) audio.arenaWanted = false; });
    audio.addEventListener("ended", () => { audio.arenaWanted = false; });
    audio.addEventListener("emptied", () => { audio.arenaWanted = false; });
    for (const kind of ["timeupdate", "pause", "ended"]) {
      audio.addEventListener(kind, () => advance(side, audio));
    }
  }

  function rewind(audio) {
    // Back to the start, while the clip is new: loaded and not yet played. The visitor's
    // own seek on a new clip (a click on its waveform) ends that, as playing does. Never
    // while a seek is under way (Gradio's own, to the last clip's position): a second seek
    // then left Chromium's player seeking for good, now and then, and the clip never
    // played. Its "seeked" event calls this again.
    if (audio && audio.arenaFresh && audio.paused && !audio.seeking && audio.currentTime > 0) {
      audio.currentTime = 0;
    }
  }

  function unstick(audio) {
    // Given a second seek before the first ended, Chromium's player now and then stays
    // seeking for good, and the clip never plays. Gradio's player seeks twice as a new clip
    // loads (to 0, then to where the last clip stopped): a seek that long under way is
    // asked again.
    // (The seeks can come before the page watched the element: the clock starts when a
    // seek is first seen.)
    // At most STUCK_TRIES times per seek: a seek that truly takes that long is not kept
    // from ending by a new one every second.
    if (!audio || !audio.seeking) return;
    const now = performance.now();
    if (!audio.arenaSeek) audio.arenaSeek = now;
    const tries = audio.arenaTries || 0;
    if (now - audio.arenaSeek < STUCK_MS || tries >= STUCK_TRIES) return;
    audio.arenaSeek = now;
    audio.arenaTries = tries + 1;
    console.warn(`arena: a seek under way for over ${STUCK_MS} ms is asked again`);
    audio.currentTime = audio.currentTime;
  }

  function fresh(side) {
    // The battle changed: its clips start at their beginning whatever the player kept.
    const audio = media(side);
    if (!audio) return;
    audio.arenaFresh = true;
    rewind(audio);
  }

  function play(side) {
    // The player follows its media element's events, in any language of its labels.
    const audio = media(side);
    watch(side);
    rewind(audio);
    if (audio) {
      audio.arenaWanted = true; // until it plays past its player's own stop (see watch)
      audio.play();
    } else {
      const button = $(`#audio-${side} button.play-pause-button`);
      if (button) button.click();
    }
  }

  function pause(side) {
    const audio = media(side);
    if (audio) audio.arenaWanted = false;
    if (audio && !audio.paused) audio.pause();
  }

  function gate() {
    return $("#gate .gate");
  }

  function listening() {
    // An audio battle waits for its vote on the Arena tab, shown (not behind another tab).
    const g = gate();
    return !!g && visible(g) && g.dataset.stage === "open" && g.dataset.modality === "audio";
  }

  function render() {
    for (const side of SIDES) watch(side);
    const shown = gate() ? gate().dataset.battle || "" : "";
    if (shown !== st.battle) {
      st.battle = shown;
      for (const side of SIDES) fresh(side);
    }
    for (const side of SIDES) rewind(media(side));
    for (const side of SIDES) unstick(media(side));
    for (const side of SIDES) {
      const chip = $(`#side-${side} .side-state`);
      const now = st.playing[side] ? "playing" : st.heard[side] ? "heard" : "idle";
      if (chip && chip.dataset.state !== now) {
        chip.dataset.state = now;
        chip.textContent = LABELS[now];
      }
    }
    for (const side of SIDES) nameControls(side);
    const missing = SIDES.filter((side) => !st.heard[side]);
    const left = heldFor();
    const locked = listening() && (missing.length > 0 || left > 0);
    const keys = keysOn();
    for (const [vote, key] of Object.entries(KEY_LABELS)) {
      const button = $(`#vote-${vote}`);
      if (!button) continue;
      // A key turned off is no shortcut a screen reader should offer.
      if (keys) button.setAttribute("aria-keyshortcuts", key);
      else button.removeAttribute("aria-keyshortcuts");
      button.classList.toggle("locked", locked && !button.disabled);
      if (locked && !button.disabled) {
        button.setAttribute("aria-disabled", "true");
        button.setAttribute("aria-describedby", "gate");
        button.title = "Listen to both clips first";
      } else {
        button.removeAttribute("aria-disabled");
        button.removeAttribute("title");
      }
    }
    const g = gate();
    if (g && listening()) {
      const text = g.querySelector(".gate-text");
      const held = g.dataset.pending && $(`#vote-${g.dataset.pending}`);
      // The gate is a live region: a count that changes each second had a screen reader
      // read the whole gate again each second. The seconds shown are hidden from it, and
      // it is told the wait once, as the server sent it (battle.gate_html says the same).
      const wait = `<b aria-hidden="true">${Math.ceil(left)} s</b><span class="sr-only">about ${Math.ceil(parseFloat(g.dataset.wait))} s</span>`;
      const html = missing.length === 0 && left > 0 && held
        ? `${LOCK} Both clips heard. Your vote <b>${held.textContent.trim()}</b> will be sent in ${wait}: the server waits as long as the clips take to play.`
        : missing.length === 0 && left > 0
        ? `${LOCK} Both clips heard. Voting opens in ${wait}: the server waits as long as the clips take to play.`
        : missing.length === 0
        ? '✓ Both clips heard: your vote, please<span class="key-hint"> (<kbd>A</kbd> <kbd>B</kbd> <kbd>T</kbd> <kbd>X</kbd>)</span>.'
        : missing.length === 2
          ? `${LOCK} Voting opens once you have heard <b>both clips</b> to the end. Press <b>Play A then B</b><span class="key-hint"> (or <kbd>P</kbd>)</span>.`
          : `${LOCK} Now listen to clip <b>${missing[0]}</b> to the end to open voting.`;
      if (text && text.dataset.html !== html) {
        text.innerHTML = html;
        text.dataset.html = html;
      }
      g.dataset.ready = missing.length > 0 ? "no" : left > 0 ? "wait" : "yes";
      sendHeld(g, locked);
    }
    bringIntoView(g);
    announce(g);
    showKeys();
    focusNext(g);
    focusNew();
    countPrompt();
  }

  function focusNew() {
    // Next battle hides as soon as it is pressed, and the focus fell to the page's body:
    // the keyboard's next Tab went to the footer, past the battle. It goes to New battle,
    // which takes Next battle's part (the focus stays where the visitor put it elsewhere).
    if (!st.leftNext) return;
    const next = $("#next-battle");
    if (visible(next)) return;
    st.leftNext = false;
    const now = document.activeElement;
    const fresh = $("#new-battle");
    if ((!now || now === document.body || now === next) && visible(fresh)) {
      fresh.focus({ preventScroll: true });
    }
  }

  function focusNext(g) {
    // After a vote its button is disabled and the focus falls to the page's body: it goes
    // to Next battle instead (once per reveal), so Enter or Space goes on from there.
    if (!g || g.dataset.stage !== "voted" || g.dataset.focused) return;
    const next = $("#next-battle");
    if (!visible(next)) return;
    g.dataset.focused = "1";
    const now = document.activeElement;
    if (!now || now === document.body || (now.closest && now.closest("#votes"))) {
      next.focus({ preventScroll: true });
      // Scrolled to only if wholly out of the window (at 200% zoom it was below it, and a
      // keyboard user could not see where the focus was): the reveal otherwise stays put.
      // At once, as a browser scrolls to a focus: a smooth scroll went on under the next
      // click, and the arena list opened meanwhile was left out of the window for good
      // (the browser tests' pick of an arena, right after a keyboard vote, under load).
      const box = next.getBoundingClientRect();
      if (box.bottom <= 0 || box.top >= window.innerHeight) {
        next.scrollIntoView({ behavior: "auto", block: "nearest" });
      }
    }
  }

  function countPrompt() {
    // The typed prompt's length against the server's limit (the prompt box's class names
    // it), counted as the server does: in characters, with runs of spaces as one.
    const box = $("#prompt-in");
    const area = box && box.querySelector("textarea");
    const limit = box && Number((box.className.match(/prompt-limit-(\d+)/) || [])[1]);
    if (!area || !limit) return;
    let line = box.querySelector("#prompt-count");
    if (!line) {
      line = document.createElement("div");
      line.id = "prompt-count";
      line.className = "prompt-count";
      line.setAttribute("aria-live", "polite");
      area.closest(".input-container").after(line);
    }
    const count = [...area.value.trim().split(/\s+/).join(" ")].length;
    // A prompt the server refused (the line under the vote buttons, below a laptop's fold
    // and in no live region) is said here too, under the box, until the prompt is edited;
    // one too long is said by the count already.
    const refusal = $("#status .prompt-refusal");
    if (refusal && !refusal.arenaPrompt) refusal.arenaPrompt = { value: area.value };
    const refused = !!refusal && refusal.arenaPrompt.value === area.value && count <= limit;
    const text = refused ? refusal.textContent.trim() : count > limit
      ? `${count} / ${limit} characters: ${count - limit} too many`
      : count > limit * 0.8 ? `${count} / ${limit} characters` : "";
    if (line.textContent !== text) line.textContent = text;
    line.classList.toggle("over", refused || count > limit);
  }

  function bringIntoView(g) {
    // On a phone the clips and the vote buttons sit far under New battle: a battle that
    // opens is scrolled into view, smoothly and once (scrolled back up, the visitor stays).
    if (!g || g.dataset.stage !== "open" || !g.dataset.battle || !visible(g)) return;
    if (st.shownBattle === g.dataset.battle) return;
    if (Date.now() - st.typed < TYPING_MS) return; // still typing: once they pause
    st.shownBattle = g.dataset.battle;
    if (!window.matchMedia(NARROW).matches) return;
    const target = [$("#prompt-shown"), $("#col-A")].find(visible);
    // At once for a visitor who asked for less motion (the system's setting).
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (target) target.scrollIntoView({ behavior: still ? "auto" : "smooth", block: "start" });
  }

  function sendHeld(g, locked) {
    // The vote the server held back, sent once its wait is over: once, from this gate
    // only (a new battle or another arena replaces the gate, and the vote goes with it),
    // and carrying this gate's battle number like any vote (listened()).
    if (locked || !g.dataset.pending || g.dataset.sent) return;
    const button = $(`#vote-${g.dataset.pending}`);
    if (!button || button.disabled || !visible(button)) return;
    g.dataset.sent = "1";
    button.click();
  }

  function heldFor() {
    // Seconds the server's listening gate still holds votes back: it refused one, and the
    // gate it sent carries the wait (data-wait), counted from when it arrived.
    const g = gate();
    if (!g || !g.dataset.wait) return 0;
    if (!g.dataset.until) g.dataset.until = String(Date.now() + parseFloat(g.dataset.wait) * 1000);
    return Math.max(0, (Number(g.dataset.until) - Date.now()) / 1000);
  }

  function nameControls(side) {
    // Screen readers meet two identical players ("Play", "Adjust volume"): name each one's
    // region and controls after its clip, and give the skip buttons readable seconds
    // (Gradio says "by 0.30152914999999997 seconds").
    const box = document.getElementById("audio-" + side);
    if (!box) return;
    if (box.getAttribute("aria-label") !== `Clip ${side}`) {
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", `Clip ${side}`);
    }
    const suffix = ` (clip ${side})`;
    for (const button of box.querySelectorAll("button[aria-label]")) {
      const label = button.getAttribute("aria-label");
      if (label.endsWith(suffix)) continue;
      const named = label.replace(/by ([\d.]+) seconds/, (_, s) => `by ${Number(s).toFixed(1)} seconds`);
      button.setAttribute("aria-label", named + suffix);
    }
  }

  function nudge() {
    const g = gate();
    if (!g) return;
    g.classList.remove("nudge");
    void g.offsetWidth; // restart the animation
    g.classList.add("nudge");
  }

  window.arena = {
    // A player's event, from its js hook: "play", "pause" or "stop" (played to the end).
    event(side, kind) {
      const other = side === "A" ? "B" : "A";
      watch(side);
      if (kind === "play") {
        st.playing[side] = true;
        if (side === "B") st.next = null;
        pause(other);
      } else {
        st.playing[side] = false;
        if (kind === "stop") {
          if (playedShare(media(side)) >= HEARD_SHARE) st.heard[side] = true;
          if (st.next === other) {
            st.next = null;
            fresh(other); // "Play A then B" plays B whole, wherever it was left
            play(other);
          }
        }
      }
      render();
    },
    playBoth() {
      pause("B");
      st.next = "B";
      const a = media("A");
      // A seek under way is let finish first (see rewind), and only the last press waits
      // for it: one start, dropped if the visitor played B or the battle changed meanwhile.
      if (st.startA) st.startA.audio.removeEventListener("seeked", st.startA.go);
      st.startA = null;
      const go = () => {
        st.startA = null;
        if (st.next !== "B" || media("A") !== a) return;
        if (a && !a.seeking && a.currentTime > 0) a.currentTime = 0;
        play("A");
      };
      if (a && a.seeking) {
        st.startA = { audio: a, go };
        a.addEventListener("seeked", go, { once: true });
      } else go();
    },
    reset() {
      // A battle still open or revealed was kept (a typed prompt refused before it was asked for).
      const g = gate();
      if (g && (g.dataset.stage === "open" || g.dataset.stage === "voted")) return;
      st.heard = { A: false, B: false };
      st.playing = { A: false, B: false };
      st.next = null;
      for (const side of SIDES) {
        played[side] = 0;
        mark[side] = null;
        pause(side);
        fresh(side);
      }
      render();
    },
    // The vote's report (JSON text): the seconds of each clip played, and the number of the
    // battle on screen as the button is pressed, so the vote counts for that battle even
    // if the next one is asked for before the server handles it (page/visit.py).
    listened() {
      // At least what the clip's own record says played: the count by events starts where
      // the clip stood when its "play" event reached this script, which on a busy machine
      // came late, and a whole listen was reported short (the record merges a replay, so it
      // is only a floor).
      const seconds = {};
      for (const side of SIDES) {
        const audio = media(side);
        if (audio && mark[side] !== null) advance(side, audio);
        seconds[side] = Math.max(played[side], audio ? playedSeconds(audio) : 0);
      }
      const round = (x) => Math.round(x * 1000) / 1000;
      const g = gate();
      const battle = g && g.dataset.battle ? Number(g.dataset.battle) : null;
      return JSON.stringify({ a: round(seconds.A), b: round(seconds.B), battle });
    },
    render,
    // What the page believes about the clips, for a failing test's message.
    state() {
      const clip = (side) => {
        const a = media(side);
        if (!a) return null;
        const ranges = [];
        for (let i = 0; i < a.played.length; i++) ranges.push([a.played.start(i), a.played.end(i)]);
        return { src: (a.currentSrc || "").slice(-40), time: a.currentTime, duration: a.duration,
          paused: a.paused, ended: a.ended, ready: a.readyState, fresh: a.arenaFresh, ranges,
          rate: a.playbackRate, error: a.error && a.error.code, seeking: a.seeking, seekSince: a.arenaSeek };
      };
      // Gradio's plain player, shown instead of the waveform when the waveform failed to load.
      const plain = (side) => [...document.querySelectorAll(`#audio-${side} audio`)].map((a) => ({
        src: (a.currentSrc || "").slice(-40), time: a.currentTime, paused: a.paused }));
      return JSON.stringify({ heard: st.heard, playing: st.playing, next: st.next, battle: st.battle,
        played, A: clip("A"), B: clip("B"), plainA: plain("A"), plainB: plain("B") });
    },
  };

  // A click on a locked vote button explains itself instead of doing nothing.
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("button.vote-btn");
    if (button && button.classList.contains("locked")) {
      event.preventDefault();
      event.stopImmediatePropagation();
      // A vote held by the server's wait: another button pressed meanwhile replaces it.
      const g = gate();
      if (g && g.dataset.pending && g.dataset.ready === "wait" && button.id.startsWith("vote-")) {
        g.dataset.pending = button.id.slice("vote-".length);
        render();
      } else nudge();
    }
  }, true);

  // A held vote is dropped the moment the visitor moves on (a new battle, another arena,
  // another tab, Enter in the prompt), not when the server's answer replaces the gate: a
  // render tick during that round trip sent it after New battle was pressed.
  function dropHeld() {
    const g = gate();
    if (g && g.dataset.pending) {
      delete g.dataset.pending;
      g.dataset.sent = "1";
    }
  }
  document.addEventListener("click", (event) => {
    const t = event.target;
    if (t && t.closest && t.closest('#new-battle, #next-battle, #arena-in, [role="tab"]')) dropHeld();
    if (t && t.closest && t.closest("#next-battle")) st.leftNext = true; // see focusNew
  }, true);
  document.addEventListener("keydown", (event) => {
    const t = event.target;
    if (event.key === "Enter" && t && t.closest && t.closest("#prompt-in")) dropHeld();
  }, true);

  document.addEventListener("input", (event) => {
    if (event.target && event.target.closest && event.target.closest("#prompt-in")) countPrompt();
  });

  // The "Keyboard shortcuts" switch (battle.keys_switch_html), wherever Gradio draws it.
  document.addEventListener("change", (event) => {
    if (event.target && event.target.id === "keys-switch") setKeys(event.target.checked);
  });

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target && (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName)
      || (target.tagName === "INPUT" && !NOT_TYPED.has(target.type)));
    if (typing && event.key !== "Enter") st.typed = Date.now();
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing || !keysOn()) return; // turned off by the visitor: the keys do nothing
    const key = event.key.toLowerCase();
    let button = null;
    if (VOTE_KEYS[key]) button = $(`#vote-${VOTE_KEYS[key]}`);
    else if (key === "n") button = [$("#next-battle"), $("#new-battle")].find((b) => visible(b) && !b.disabled);
    else if (key === "p" && listening()) {
      event.preventDefault();
      window.arena.playBoth();
      return;
    }
    if (button && visible(button) && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  });

  // The session's vote count only grows, but two events write the header: a vote, and the
  // arena picked while it waited, whose header the server can render from the count before
  // the vote and deliver after the vote's. The header shows the highest count this page
  // was sent (data-you), whatever order the two arrive in.
  let youMost = 0;
  function keepYou() {
    const line = document.querySelector("#arena-header .arena-line");
    if (!line) return;
    const you = Number(line.dataset.you || 0);
    if (you >= youMost) {
      youMost = you;
      return;
    }
    line.dataset.you = String(youMost);
    let span = line.querySelector(".you");
    if (!span) {
      span = document.createElement("span");
      span.className = "you";
      (line.querySelector(".stats") || line).appendChild(span);
    }
    span.innerHTML = `you: <b>${youMost}</b> this session`;
  }

  // Each header is seen as it lands (a timer could miss one replaced within its period),
  // and the shortcuts' switch is set as soon as Gradio draws it (not at the next tick).
  new MutationObserver(() => { keepYou(); showKeys(); }).observe(document.body, { childList: true, subtree: true });
  showKeys();

  // Gradio re-renders a button's classes when its properties change: keep the lock on.
  setInterval(render, 250);
}
