"""The model page's recent battles, heard: both clips of each, where the Space still has them.

On the model page the models are named, so nothing here is blind. The clips are the
shaped ones (one sample rate, one loudness: what each listener heard, less the per-battle
jitter and dither), kept by the blinder under the output cache's key of (model, prompt,
language, engine version). A battle is shown only when both engines still run the versions
its vote recorded and both clips are there: an engine updated since makes other sounds, so
its old battles go without audio rather than with audio nobody voted on.

No Gradio here: :func:`heard_battles` picks the clips, the Leaderboard tab plays them.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from arena_core.analysis.model_report import ModelReport, RecentBattle
from arena_core.backends.output import Output

#: Recent battles the model page plays, newest first: each is two players, so a handful.
AUDIO_BATTLES = 5


@dataclass(frozen=True)
class HeardBattle:
    battle: RecentBattle
    own: Output
    other: Output


def heard_battles(report: ModelReport, pool, blinder,
                  limit: int = AUDIO_BATTLES) -> list[HeardBattle]:  # fmt: skip
    """The newest of ``report.recent`` with both clips in the blinder's cache, at most ``limit``.

    ``pool`` is the arena's :class:`~arena_core.backends.pool.ModelPool` (its cache keys),
    ``blinder`` the Space's :class:`~arena_core.space.blinding.Blinder`; without either
    (no cache, a text arena) there is nothing to play.
    """
    if pool is None or blinder is None:
        return []
    heard = []
    for battle in report.recent:
        if battle.prompt is None:
            continue
        sides = ((report.model, battle.version), (battle.opponent, battle.opponent_version))
        try:
            if any(pool.model_version(m) != version for m, version in sides):
                continue  # an engine updated since: its clip now is not the one voted on
            keys = [pool.cache_key(m, battle.prompt, battle.category) for m, _ in sides]
        except KeyError:  # a model no longer in the registry
            continue
        if None in keys:
            continue
        clips = [blinder.shaped(key) for key in keys]
        if None in clips or any(c.modality != "audio" for c in clips):
            continue
        heard.append(HeardBattle(battle, *clips))
        if len(heard) == limit:
            break
    return heard


def heard_label(heard: HeardBattle, names: dict[str, str]) -> str:
    """One line above the two players, as HTML: when, against whom, the result and the prompt.

    HTML, not Markdown: a prompt a visitor typed is shown to everyone who opens the model
    page, and Markdown would render ``![](https://...)`` in it as an image fetched from
    anywhere (escaping HTML alone does not stop Markdown's own syntax).
    """
    b = heard.battle
    when = b.ts[:16].replace("T", " ")
    opponent = names.get(b.opponent, b.opponent)
    return (f'<p class="heard-line"><b>{escape(when)} UTC</b> · against {escape(opponent)} · '
            f"{escape(b.result)} · “{escape(b.prompt or '')}”</p>")  # fmt: skip
