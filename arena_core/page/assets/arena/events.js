  // Part 4 of the page script: window.arena (the players' hooks, Play A then B, the vote's
  // listening report) and the page's listeners (keys, clicks, the shortcuts' switch).
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
