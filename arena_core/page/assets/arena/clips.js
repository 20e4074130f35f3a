  // Part 2 of the page script (assets.SCRIPT_PARTS, one function's body: the parts share
  // its scope): the two players' media elements, what each played, and one clip at a time.
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
