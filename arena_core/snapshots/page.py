"""The line under a board: the revision it was computed from, the code, and the command
that prints it again. Plain HTML from plain values; no Gradio here."""

from __future__ import annotations

import html
import shlex

from arena_core.snapshots.revision import Revision
from arena_core.snapshots.version import CodeVersion

#: Small print, wrapping anywhere (a commit id and a command are long words on a phone).
_STYLE = "font-size: 0.85em; color: var(--arena-muted, #666); overflow-wrap: anywhere"


def reproduce_command(revision: Revision, settings: dict) -> str:
    """The ``python -m arena_core leaderboard`` command that prints this board again.

    From the Hub commit when it holds exactly the board's votes; otherwise from the
    Space's vote folder (``ARENA_DATA_DIR``), which only the operator has. When the commit
    lacks the board's registry (:attr:`Revision.registry_missing`), with the Space's own
    ``registry.yaml`` instead of the commit's.
    """
    if revision.exact_commit:
        where = ["--repo", revision.repo, "--revision", revision.commit]
        if revision.registry_missing:
            where += ["--registry", "registry.yaml"]
    else:
        where = ["--votes", "data/votes", *(["data/hub/data"] if revision.repo else []),
                 "--registry", "registry.yaml"]  # fmt: skip
    args = ["python", "-m", "arena_core", "leaderboard", *where, "--arena", settings["arena"]]
    for key in ("category", "since", "until"):
        if settings.get(key):
            args += [f"--{key}", settings[key]]
    if settings["unavailable"]:
        args += ["--unavailable", *settings["unavailable"]]
    if revision.read_at:  # the same clock judges the same rows to be from the future
        args += ["--read-at", revision.read_at]
    return shlex.join([*args, "--format", "json"])


def revision_html(revision: Revision, code: CodeVersion, settings: dict) -> str:
    """A small footer: "Computed from … with code …", and the command that reproduces it.

    When the named commit lacks the registry the board was rated with, no claim that the
    Hub alone reproduces it: the page says why, and that the claim holds again once the
    registry is published (the Space retries before each push)."""
    text = html.escape(f"Computed from {revision.label()}; code {code.label()}.")
    command = html.escape(reproduce_command(revision, settings))
    claim = "Same board, to the last digit:"
    if revision.registry_missing:
        claim = html.escape(
            f"Not reproducible from the Hub alone yet: commit {revision.commit[:12]} holds "
            "another registry (the previous deploy's, or none) than the one this board was "
            "rated with, as the Space could not publish its registry to the dataset yet; it "
            "retries at each push, and once it lands the board names a commit that holds it "
            "and this command replays it exactly. Until then it replays the same votes only "
            "with the Space's own registry.yaml:"
        )
    return (f'<div class="board-revision" style="{_STYLE}"><p>{text}</p>'
            f'<p>{claim} <code style="word-break: break-all">{command}'
            "</code></p></div>")  # fmt: skip
