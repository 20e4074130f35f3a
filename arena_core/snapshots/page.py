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
    Space's vote folder (``ARENA_DATA_DIR``), which only the operator has.
    """
    if revision.exact_commit:
        where = ["--repo", revision.repo, "--revision", revision.commit]
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
    """A small footer: "Computed from … with code …", and the command that reproduces it."""
    text = html.escape(f"Computed from {revision.label()}; code {code.label()}.")
    command = html.escape(reproduce_command(revision, settings))
    return (f'<div class="board-revision" style="{_STYLE}"><p>{text}</p>'
            f'<p>Same board, to the last digit: <code style="word-break: break-all">{command}'
            "</code></p></div>")  # fmt: skip
