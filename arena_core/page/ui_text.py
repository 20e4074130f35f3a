"""The words of the page: header, hints and the About tab, kept apart from layout."""

from __future__ import annotations

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
prompt's language in a multilingual arena). Votes go where they teach the ranking most:
mostly to models whose order is still in doubt (close ratings, overlapping intervals), then to
those with the widest intervals, while a new model first meets opponents from across the board
and every model keeps at least half its share of battles. Which one is shown as "A" is a coin
flip, and the registry can weight a model or keep two versions of one model apart.
A model that fails or times out does not lose: the battle is redrawn without it, and a model
that keeps failing is paused for a few minutes.

**Votes.** One vote per battle, checked against the server's own record of the battle: the
page never knows which models it is playing. A tie and "both are bad" each count as half a
win for both sides. A voter is identified only by a salted hash; votes above the rate limit
are kept in the log with a flag and left out of the ratings.

**Ratings.** The board is a Bradley-Terry model fitted by maximum likelihood to all counted
votes, on a scale where 1000 is the anchor and 400 points mean 10-to-1 odds. Each model also
gets {prior_weight:g} virtual draws against its starting rating (a published benchmark figure
where the registry gives one, else 1000), so a model with few votes stays near its start
instead of jumping to an extreme. The 95% interval comes from {rounds} bootstrap resamples of
the votes; "Rank (UB)" is 1 + the number of models whose interval lies wholly above this
one's. "Seq. Elo" is the classic Elo rating replayed vote by vote (new models move by up to
48 points per vote, settled ones by about 12): it is what moves in the reveal after your vote.

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


def about(registry: Registry, params: BoardParams, status: dict[str, str] | None = None) -> str:
    """The About tab: methodology, reproduction, and every model with its licence.

    ``status`` maps ``"<arena>/<model id>"`` to "available" or why the model cannot run
    on this server (engine missing, no token), shown next to it.
    """
    text = METHODOLOGY.format(
        prior_weight=params.prior_weight, rounds=params.bootstrap_rounds,
        width=params.established_ci_width, battles=params.established_min_battles,
    )  # fmt: skip
    sections = [text, "## Models and licences"]
    for arena in registry.arenas:
        sections.append(f"### {arena.title} (`{arena.id}`)")
        if arena.description:
            sections.append(arena.description)
        sections.append(
            "| Model | Id | Params | Licence | On this server |\n| --- | --- | --- | --- | --- |"
        )
        for m in arena.models:
            name = f"[{m.name}]({m.url})" if m.url else m.name
            here = (status or {}).get(f"{arena.id}/{m.id}", "")
            licence = m.license or "not stated"
            sections[-1] += f"\n| {name} | `{m.id}` | {m.params or ''} | {licence} | {here} |"
    return "\n\n".join(sections)
