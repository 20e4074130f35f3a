"""The code version a board names: package version and git commit, unknown when unknown."""

import subprocess

from arena_core.snapshots.version import (
    ROOT,
    CodeVersion,
    code_version,
    git_commit,
    package_version,
)


def test_the_package_version_comes_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2.3.4"\n')
    assert package_version(tmp_path) == "2.3.4"
    assert package_version(tmp_path / "missing") is None


def test_the_commit_is_the_work_trees_own():
    # An independent reading: git itself, asked directly.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    commit, _ = git_commit(ROOT)
    assert commit == head
    assert code_version().commit == head and code_version().package == "0.1.0"


def test_outside_a_work_tree_the_commit_is_unknown_not_guessed(tmp_path):
    assert git_commit(tmp_path) == (None, None)

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    assert git_commit(ROOT, run=no_git) == (None, None)
    assert CodeVersion("0.1.0").label() == "0.1.0 (commit unknown)"


def test_labels_say_when_the_tree_differs_from_its_commit():
    assert CodeVersion("0.1.0", "3bc0878c" + "0" * 32, False).label() == "0.1.0 (git 3bc0878)"
    assert (
        CodeVersion("0.1.0", "3bc0878c" + "0" * 32, True).label() == "0.1.0 (git 3bc0878, modified)"
    )
    assert CodeVersion(None).label() == "version unknown (commit unknown)"
