"""The words of the page: header, hints and the About tab, kept apart from layout."""

from __future__ import annotations

from collections.abc import Mapping

from arena_core.leaderboard import BoardParams
from arena_core.registry import Registry

TITLE = "Open Model Arena"

HEADER = f"""# {TITLE}
Two anonymous models answer the same prompt. Listen or read, then vote for the better one.
Their names are revealed only after your vote. Every vote is published so anyone can
recompute the leaderboard."""

PROMPT_HINT = "Leave empty for a random prompt from the arena's set, or type your own."
LISTEN_HINT = "Listen to both clips to the end, then vote."
READ_HINT = "Compare both outputs, then vote."
WORKING = "Generating both outputs…"

METHODOLOGY = """## How it works

**Pairs.** Each battle draws two models that are available right now (and that speak the
prompt's language in a multilingual arena). Pairs that have met less often are drawn more
often (weight 1/√(1 + battles between them)), and which one is shown as "A" is a coin flip.
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

prints exactly this board (`--format json` or `csv` for machines, `--category de` for one
language).

## Add a model

Open a pull request that adds an entry to the arena's `models:` list in `registry.yaml`:
a stable `id`, a display `name`, a `backend` block (engine or hosted endpoint), and, only
where its own documentation states them, `params`/`params_m`, a `license` and a `url`.
A starting rating (`prior`) needs a published benchmark figure and its `source`.
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


def about(registry: Registry, params: BoardParams, status: dict[str, str] | None = None,
          rtf: Mapping[str, float] | None = None, rtf_note: str = "") -> str:  # fmt: skip
    """The About tab: methodology, reproduction, and every model with its licence.

    ``status`` maps ``"<arena>/<model id>"`` to "available", "paused: <why>" or why the
    model cannot run on this server (engine missing, no token), shown next to it.
    ``rtf`` maps model ids to their measured real-time factor (``bench/rtf.py``), and
    ``rtf_note`` says where it was measured.
    """
    text = METHODOLOGY.format(
        prior=_prior_words(params), width=params.established_ci_width,
        battles=params.established_min_battles,
    )  # fmt: skip
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
            name = f"[{m.name}]({m.url})" if m.url else m.name
            here = (status or {}).get(f"{arena.id}/{m.id}", "")
            licence = m.license or "not stated"
            speed = f"{rtf[m.id]:.2f}" if rtf and m.id in rtf else ""
            sections[-1] += (
                f"\n| {name} | `{m.id}` | {m.params or ''} | {licence} | {speed} | {here} |"
            )
    return "\n\n".join(sections)
