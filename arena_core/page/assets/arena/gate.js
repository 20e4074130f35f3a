  // Part 3 of the page script: the gate's words, the vote buttons' lock, where the focus
  // goes after a vote, the prompt's character count, and a held vote sent once its wait is over.
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
