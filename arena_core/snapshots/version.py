"""The version of the code that computed a board: the package version and, when known, its commit.

A Space runs a clone of its repo, but Hugging Face does not tell the app which commit it
runs (its runtime variables are ``SPACE_ID``, ``SPACE_AUTHOR_NAME``, ``SPACE_REPO_NAME``,
``SPACE_HOST``, ``SPACE_TITLE``, ``SPACE_CREATOR_USER_ID`` and the hardware ones), and the
clone may carry no ``.git``. So the commit comes from ``git`` when the code runs in a work
tree, and is otherwise reported unknown, never guessed; the package version from
``pyproject.toml`` is always there.
"""

from __future__ import annotations

import functools
import logging
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: The folder holding ``pyproject.toml`` and, in a clone, ``.git``.
ROOT = Path(__file__).resolve().parents[2]
#: Seconds ``git`` may take to answer before the commit is reported unknown.
GIT_TIMEOUT = 5.0


@dataclass(frozen=True)
class CodeVersion:
    """Package version, git commit (None: unknown) and whether the work tree differs from it."""

    package: str | None
    commit: str | None = None
    #: True when files tracked by git differ from the commit (the code is not that commit's).
    modified: bool | None = None

    def to_json(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """``0.1.0 (git 3bc0878)``, ``... modified``, or ``... commit unknown``."""
        name = self.package or "version unknown"
        if self.commit is None:
            return f"{name} (commit unknown)"
        return f"{name} (git {self.commit[:7]}{', modified' if self.modified else ''})"


def package_version(root: Path = ROOT) -> str | None:
    """``project.version`` of ``pyproject.toml`` (None when the file is not shipped)."""
    try:
        with (root / "pyproject.toml").open("rb") as f:
            return tomllib.load(f)["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        log.warning("no package version in %s: %s", root, exc)
        return None


def git_commit(root: Path = ROOT, run: Callable = subprocess.run) -> tuple[str | None, bool | None]:
    """The commit checked out in ``root`` and whether tracked files differ; (None, None) when
    ``root`` is not a git work tree or git is missing."""
    try:
        head = run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                   timeout=GIT_TIMEOUT, check=True).stdout.strip()  # fmt: skip
        status = run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                     capture_output=True, text=True, timeout=GIT_TIMEOUT, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("no git commit for %s: %s", root, exc)
        return None, None
    if len(head) != 40:
        return None, None
    return head, bool(status.strip())


@functools.cache
def code_version() -> CodeVersion:
    """This process's code version (read once: the code does not change while it runs)."""
    commit, modified = git_commit()
    return CodeVersion(package_version(), commit, modified)
