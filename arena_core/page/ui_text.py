"""The words of the page: header, hints and the About tab, kept apart from layout."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

from arena_core.leaderboard import BoardParams
from arena_core.registry import Registry
from arena_core.registry.fields import http_url

TITLE = "Open Model Arena"

HEADER = f"""<div class="page-head"><h1>⚖️ {TITLE}</h1>
<p class="tagline">Two anonymous models read the same text. Listen to both, vote for the better
one, and only then see who they were. Every vote is public, so anyone can recompute the board.</p>
</div>"""

PROMPT_HINT = "Leave empty for a sentence from the arena's set, or type your own."
PROMPT_INFO = "Your typed prompt is published with your vote: type nothing private."
LANGUAGE_INFO = "The language of your typed prompt: only voices that speak it answer."
#: A battle asked for with a language the arena has not (typed into the language box).
LANGUAGE_UNKNOWN = "Pick the language of your prompt from the list."
LISTEN_HINT = "Listen to both clips to the end, then vote."
READ_HINT = "Compare both outputs, then vote."
WORKING = "Generating both outputs…"
#: Where a battle or a vote failed on the server for a reason of its own (not a refusal).
BATTLE_FAILED = ("Something went wrong on the server while making this battle. "
                 "Press New battle to try again.")  # fmt: skip
VOTE_FAILED = ("Something went wrong on the server while recording your vote. "
               "Press your choice again, or start a new battle.")  # fmt: skip
#: Under the buttons while the server's listening gate holds a pressed vote back (the gate
#: above counts down and names it; the page script sends it when the count ends).
HELD_VOTE = ("Your vote is **not recorded yet**: the server takes votes once the clips' "
             "playing time has passed. It is sent by itself when the countdown ends; "
             "another vote button changes it; a new battle, another arena or another tab "
             "drops it.")  # fmt: skip


def vote_on_left_battle(session_votes: int) -> str:
    """The toast for a vote recorded after its battle left the screen (the visitor pressed
    Next before the server handled it): its reveal is not shown, the vote still counts."""
    return f"Your vote on the previous battle was saved: {session_votes} this session."


#: The board's toggle for the models whose rating is not settled yet.
PROVISIONAL_TOGGLE = "Include provisional and unrated models"

VISITORS = """## Voting

1. Pick an arena and press **New battle** (or the <kbd>N</kbd> key). Two models, drawn at
   random and shown only as **A** and **B**, read the same sentence. Leave the prompt empty
   for one of the arena's sentences, or type your own (in a multilingual arena, choose its
   language: only voices that speak it answer).
2. Listen to both clips to the end (**Play A then B** plays them in turn; starting one
   pauses the other). Each side says whether you have heard it.
3. Vote: **A is better** (<kbd>A</kbd>), **B is better** (<kbd>B</kbd>), **Tie**
   (<kbd>T</kbd>) or **Both are bad** (<kbd>X</kbd>). The buttons open once both clips were
   heard; the server also checks that enough time passed to hear them (a vote pressed
   before then waits, counted down above the buttons, and is sent by itself).
4. The names are revealed: which model was which, a link to its page, how its rating moved
   and where it now ranks. **Next battle** (<kbd>N</kbd>) starts another.

The one-key shortcuts (<kbd>A</kbd> <kbd>B</kbd> <kbd>T</kbd> <kbd>X</kbd> <kbd>N</kbd>
<kbd>P</kbd>) can be turned off with the **Keyboard shortcuts** switch under the vote
buttons; your browser remembers the choice.

## What the labels mean

On the leaderboard:

- **Rank** is a band, such as 2–4: the places a model could hold given the votes so far.
  Models whose intervals overlap share places.
- **provisional**: the model has votes, but its 95% interval is still wider than {width:g}
  points or it has fewer than {battles} battles; its rank may still change a lot. Models
  without a badge are *established*.
- **Not yet rated**: the model is in the arena but has no votes yet.
- **unavailable here**: the model has votes, but cannot run on this server now (a hosted
  model without a token, an engine that is not installed); it gets no new battles.

For each model below, on this server:

- **Running**: it takes part in battles.
- **Being checked**: a hosted model is called once on a short sentence at start-up; it joins
  the battles when it answers.
- **Paused**: it failed several times in a row (or its service did not answer); it is left
  out for a few minutes and then tried again. No battle is lost on it.
- **Needs a Hugging Face token**, **Not installed here**, **Offline here**: the server
  cannot run it; the operator can fix that (README, "Configuration").

## What is published, and what is never stored

Each vote is published in the arena's public dataset: the arena, the two models, the
sentence (**including a prompt you typed**), its category or language, your vote, the
time, a voter code, a session code and the vote's number in your session, and how many
seconds of each clip your browser played before the vote. The voter code is a salted hash
of your Hugging Face user name when you are signed in, else of your network address: it
tells one voter's votes apart (for the rate limit and the test for manipulated votes) and
cannot be turned back into you without the secret salt, which is never published. The
session code is the same kind of hash of this page load: it links the votes of one visit.

Never stored by this app: your network address, your user name, or anything about your
browser or device. The clips are kept in a size-bounded cache on the server (so a sentence
is not synthesised twice); the models' clips of the arena's own sentences are published
with the votes, for research; clips of a sentence you typed are not.
"""

METHODOLOGY = """## How it works

**Pairs.** Each battle draws two models available right now (that speak the prompt's
language in a multilingual arena) where a vote teaches the ranking most: mostly models whose
order is still in doubt (close ratings, overlapping intervals), then those with the widest
intervals, while a new model first meets opponents from across the board and every model
keeps at least half its share of battles. Which one is shown as "A" is a coin flip, and the
registry can weight a model or keep two versions of one model apart.
A model that fails or times out does not lose: the battle is redrawn without it, and a model
that keeps failing is paused for a few minutes.

**Votes.** One vote per battle, checked against the server's own record of the battle: the
page never knows which models it is playing. A tie and "both are bad" each count as half a
win for both sides. A voter is identified only by a salted hash; votes above the rate limit
are kept in the log with a flag and left out of the ratings.

**Ratings.** The board is a Bradley-Terry model of all counted votes, on a scale where 1000
is the anchor and 400 points mean 10-to-1 odds. Each model starts from a prior rating (a
published benchmark figure where the registry gives one, else 1000); {prior}. A rating is the
posterior mean and its 95% interval the posterior's, so a model with three votes has a wide
interval and it narrows as votes arrive: across models drawn like this arena's, 95% of the
intervals hold the true rating. "Rank" is a band: from 1 + the number of models whose interval
lies wholly above, to the last position not ruled out, so models whose intervals overlap share
positions. Models without battles are "not yet rated"; groups of models that never met are
ranked apart. "Seq. Elo" is the classic Elo rating replayed vote by vote (new models move by
up to 48 points per vote, settled ones by about 12): it is what moves in the reveal after your
vote.

**Judges and style.** Automatic judges (a speech recogniser, a pitch measure, and for chat,
large language models) vote on battles like visitors, each battle twice with the sides
swapped; their votes never count here. The Leaderboard's *Judges* view shows how far each
agrees with the human votes, its biases (for the side shown first, its own family, longer
clips) and its board corrected for them. The *Style-controlled* view rates the models with
each clip's duration, speaking rate, loudness and sample rate held equal.

**Provisional.** A model is *established* once its interval is at most
{width:g} points wide and it has at least {battles} battles; before that it is
*provisional* and its rank may still change a lot.

## Download the votes and reproduce the board

The votes are one JSON object per line (schema in the repository README). With the
repository checked out and the votes downloaded to `votes/`:

```bash
pip install -r requirements.txt
python -m arena_core leaderboard --votes votes/ --registry registry.yaml --arena tts-en
```

prints this board (`--format json` or `csv` for machines, `--category de` for one
language; without `--arena` the table lists every arena's board). To the last digit: the
command printed under each board adds the settings it was computed with, such as
`--unavailable` for the models that do not run here and the revision of the votes.

## Add a model

Model authors: open a pull request that adds an entry to the arena's `models:` list in
`registry.yaml`:

```yaml
      - id: my-org/my-voice          # stable: votes are filed under it
        name: My Voice (v1)          # what the board shows
        backend: {{type: hf-inference, model: my-org/my-voice}}   # or a local engine
        license: Apache-2.0          # the weights' licence, its SPDX id first: only a recognised open one counts as open weights
        url: https://huggingface.co/my-org/my-voice
        params: 82M                  # only where your own documentation states them
        params_m: 82
```

A starting rating (`prior`) needs a published benchmark figure, its `source` and the date
you read it (`accessed`); `python -m arena_core registry --check` lists what is missing. The
loader checks every field and names the first problem; the tests synthesise with every
local engine. A new model starts *not yet rated*, plays under-sampled pairs more often,
and becomes *established* once its interval is narrow enough.
"""


RTF_EXPLAINED = """**RTF** is the real-time factor of a local engine: seconds of computing per second of
speech, the median over sample prompts, measured with `python bench/rtf.py`{note}.
Below 1 the engine speaks faster than real time. Hosted models run elsewhere and have none."""


def _prior_words(params: BoardParams) -> str:
    """How the board's prior works, in a clause."""
    if params.prior_weight is None:
        return ("how far true ratings spread around their priors is learnt from the arena's own "
                "models")  # fmt: skip
    if params.prior_weight == 0:
        return (f"this board uses no prior (plain maximum likelihood, {params.bootstrap_rounds} "
                "bootstrap resamples for the intervals)")  # fmt: skip
    return f"the prior counts as {params.prior_weight:g} votes"


def model_state(raw: str) -> str:
    """A model's state on this server in a visitor's words (see "What the labels mean").

    ``raw`` is :meth:`ArenaService.model_status`'s text: "available", "paused: <why>", or
    the operator's reason the model cannot run here (the log keeps that one).
    """
    if raw == "available":
        return "Running"
    if raw.startswith("paused: checking"):
        return "Being checked"
    if raw.startswith("paused"):
        return "Paused, retried automatically"
    if "HF_HUB_OFFLINE" in raw:
        return "Offline here"
    if "HF_TOKEN" in raw or "token" in raw.lower():
        return "Needs a Hugging Face token"
    if "not installed" in raw or "not on PATH" in raw or "not found" in raw:
        return "Not installed here"
    return "Cannot run here" if raw else ""


def about(registry: Registry, params: BoardParams, status: Mapping[str, str] | None = None,
          rtf: Mapping[str, float] | None = None, rtf_note: str = "") -> str:  # fmt: skip
    """The About tab: voting, labels, privacy, methodology, reproduction, adding a model,
    and every model with its licence and its state here.

    ``status`` maps ``"<arena>/<model id>"`` to :meth:`ArenaService.model_status`'s text,
    shown in a visitor's words (:func:`model_state`). ``rtf`` maps model ids to their
    measured real-time factor (``bench/rtf.py``), and ``rtf_note`` says where it was measured.
    """
    numbers = {"width": params.established_ci_width, "battles": params.established_min_battles}
    text = (
        VISITORS.format(**numbers)
        + "\n"
        + METHODOLOGY.format(prior=_prior_words(params), **numbers)
    )
    sections = [text, "## Models and licences"]
    if rtf:
        sections.append(RTF_EXPLAINED.format(note=f" ({rtf_note})" if rtf_note else ""))
    for arena in registry.arenas:
        sections.append(f"### {arena.title} (`{arena.id}`)")
        if arena.description:
            sections.append(arena.description)
        sections.append(
            "| Model | Id | Params | Licence | RTF | On this server |\n"
            "| --- | --- | --- | --- | --- | --- |"
        )
        for m in arena.models:
            name = markdown_text(m.name)
            if m.url and http_url(m.url):
                name = f"[{name}]({markdown_url(m.url)})"
            here = model_state((status or {}).get(f"{arena.id}/{m.id}", ""))
            licence = markdown_text(m.license or "not stated")
            speed = f"{rtf[m.id]:.2f}" if rtf and m.id in rtf else ""
            sections[-1] += (f"\n| {name} | `{m.id}` | {markdown_text(m.params or '')} | "
                             f"{licence} | {speed} | {here} |")  # fmt: skip
    return "\n\n".join(sections)


#: Characters that start Markdown or HTML inside a line of text or a table cell (``:`` and
#: ``@``: a bare URL or address is made a link, which swallowed what followed it).
_MARKDOWN = re.compile(r"[&<>\\`*_\[\]!|~:@]")


def markdown_text(text: str) -> str:
    """A registry field (a model's name, licence, size) as Markdown that shows it as written:
    each character that Markdown or HTML reads as markup written as a character reference
    (``&#91;`` for ``[``), which is text wherever it stands (a backslash's escape was undone
    inside a link's text). Written as it is, a name holding ``![](http://...)`` or ``<img
    src=...>`` showed an image fetched from anywhere to every visitor of the About tab
    (Gradio's sanitizer keeps images and forms), and a ``|`` split its table cell."""
    return _MARKDOWN.sub(lambda m: f"&#{ord(m[0])};", text)


def markdown_url(url: str) -> str:
    """An http(s) URL as a Markdown link's target: the characters that would end the target
    (a ``)``: the rest of the URL went on as Markdown, an image say), or split the table's
    cell, percent-encoded; the link leads to the same page."""
    return quote(url, safe=":/?#[]@!$&'*+,;=%~-._")
