"""The dataset repo from outside the Space: one revision's votes, and compaction.

The command line's operations on the repo: ``leaderboard --repo/--revision`` and the daily
snapshots download one revision (:func:`download_revision`), ``compact --repo`` rolls the
repo's files up in one commit (:func:`compact_repo`). Each is one call on an injected
``HfApi`` that shares nothing with the Space's :class:`~arena_core.dataset.hub.HubSync`
(its shard, its lock, its retries), so they live apart from it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.hf_api import RepoFile

from arena_core.dataset.card import REGISTRY_DIR
from arena_core.dataset.compact import CompactReport, compact
from arena_core.dataset.uploader import DATA_DIR

__all__ = ["compact_repo", "download_revision"]


def download_revision(api: HfApi, repo_id: str, revision: str, local_dir: Path) -> tuple[Path, str]:
    """The vote files and registry of one revision of the dataset, and its full commit id.

    ``revision`` may be a commit, a branch or a tag; the commit it names is asked for
    first, so the files and the id reported always match. Only ``data/**`` (the votes)
    and ``registry/**`` (the registry and prompts the Space published) are downloaded.
    """
    sha = api.repo_info(repo_id, repo_type="dataset", revision=revision).sha
    path = api.snapshot_download(repo_id=repo_id, repo_type="dataset", revision=sha,
                                 local_dir=local_dir,
                                 allow_patterns=[f"{DATA_DIR}/**", f"{REGISTRY_DIR}/**"])  # fmt: skip
    return Path(path), sha


def compact_repo(
    api: HfApi, repo_id: str, workdir: Path, *, min_age_minutes: float
) -> CompactReport:
    """Compact the repo's vote files in one commit (monthly files added, sources deleted).

    Ages come from each file's last commit on the Hub, so files a live Space
    may still re-push are left alone.
    """
    now = datetime.now(UTC)
    # Everything is read at one commit, and the compaction's commit names it as its parent:
    # if anything landed meanwhile (the Space re-pushing a shard it thought unsent), the Hub
    # refuses the commit instead of deleting a file newer than the copy that was compacted.
    head = api.repo_info(repo_id, repo_type="dataset").sha
    tree = api.list_repo_tree(
        repo_id,
        path_in_repo=DATA_DIR,
        recursive=True,
        expand=True,
        repo_type="dataset",
        revision=head,
    )
    ages = {
        entry.path.removeprefix(f"{DATA_DIR}/"): (now - entry.last_commit.date).total_seconds()
        for entry in tree
        if isinstance(entry, RepoFile) and entry.last_commit is not None
    }
    api.snapshot_download(repo_id=repo_id, repo_type="dataset", local_dir=workdir,
                          allow_patterns=[f"{DATA_DIR}/**"], revision=head)  # fmt: skip
    data = Path(workdir) / DATA_DIR
    report = compact(data, min_age_minutes=min_age_minutes, ages=ages, delete=False)
    if not report.rolled:
        return report
    operations = [
        CommitOperationAdd(
            path_in_repo=f"{DATA_DIR}/{p.relative_to(data).as_posix()}", path_or_fileobj=p
        )
        for p in report.written + ([report.manifest] if report.manifest else [])
    ] + [
        CommitOperationDelete(path_in_repo=f"{DATA_DIR}/{p.relative_to(data).as_posix()}")
        for p in report.rolled
    ]
    message = f"Compact {report.votes} votes from {len(report.rolled)} files"
    if report.already_compacted:  # a retried push had brought back votes already rolled up
        message += f" ({report.already_compacted} already compacted, not written again)"
    api.create_commit(repo_id=repo_id, repo_type="dataset", operations=operations, parent_commit=head,
                      commit_message=message)  # fmt: skip
    return report
