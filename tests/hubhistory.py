"""A Hub stand-in that keeps every commit, so one revision of the dataset can be downloaded.

The real Hub cannot be reached from the test machine. ``LocalHubApi`` (hubfake.py) keeps
only the repo's current files; ``HistoryHubApi`` also keeps the files of every commit, as
the Hub does, and answers ``repo_info(revision=...)`` and ``snapshot_download(revision=...)``
for any of them. Commit ids count up from 1; files written into the repo folder without a
commit (``hubfake.seed_repo``) belong to the state before the first commit, id 0.
"""

import contextlib
import fnmatch
import os
from pathlib import Path
from types import SimpleNamespace

from fakes import build_steady_service
from hubfake import PROMPTS, REGISTRY, REPO, LocalHubApi, _files, row, seed_repo


class HistoryHubApi(LocalHubApi):
    def __init__(self, root: Path):
        super().__init__(root)
        self.history: dict[str, dict[str, dict[str, bytes]]] = {}  # repo -> commit -> files

    def head(self, repo_id: str) -> str:
        return f"{len(self.commits):040x}"

    def _apply(self, repo_id, operations, commit_message, repo_type):
        states = self.history.setdefault(repo_id, {})
        states.setdefault(self.head(repo_id), _files(self, repo_id))
        info = super()._apply(repo_id, operations, commit_message, repo_type)
        states[info.oid] = _files(self, repo_id)
        return info

    def _resolve(self, repo_id: str, revision: str | None) -> str:
        if revision in (None, "main"):
            return self.head(repo_id)
        if revision in self.history.get(repo_id, {}) or revision == self.head(repo_id):
            return revision
        raise ValueError(f"{repo_id} has no revision {revision!r}")

    def repo_info(self, repo_id, *, repo_type=None, revision=None, **kwargs):
        self._reach()
        return SimpleNamespace(id=repo_id, sha=self._resolve(repo_id, revision))

    def snapshot_download(self, repo_id, *, repo_type=None, local_dir=None, allow_patterns=None,
                          revision=None, **kwargs):  # fmt: skip
        self._reach()
        sha = self._resolve(repo_id, revision)
        files = self.history.get(repo_id, {}).get(sha)
        if files is None:  # the head, before any commit
            files = _files(self, repo_id)
        out = Path(local_dir)
        for rel, data in files.items():
            if data is None or (
                allow_patterns and not any(fnmatch.fnmatch(rel, p) for p in allow_patterns)
            ):
                continue
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        return str(out)


@contextlib.contextmanager
def synced_space(tmp_path: Path, monkeypatch, earlier_votes: int):
    """A Space synced to a stand-in repo holding ``earlier_votes`` votes, replay done, and
    ``leaderboard --repo`` pointed at the same stand-in. Yields (service, api, settings)."""
    from arena_core.snapshots import source
    from arena_core.space.config import Settings

    (tmp_path / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "prompts.yaml").write_text(PROMPTS)
    api = HistoryHubApi(tmp_path / "hub")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    seed_repo(api, [row(k, vote="ab"[k % 2]) for k in range(1, earlier_votes + 1)])
    settings = Settings(registry=tmp_path / "registry.yaml", data_dir=tmp_path / "data", voter_salt="s",
                        dataset_repo=REPO, push_minutes=60, listen_share=0.0)  # fmt: skip
    # The tests' voter casts five votes or more: stamped steadily, it is never flagged.
    service = build_steady_service(settings, env={"PATH": os.environ.get("PATH", "")}, hf_api=api)
    try:
        service.load()
        monkeypatch.setattr(source, "API_FACTORY", lambda: api)
        yield service, api, settings
        service.sync.flush(timeout=5)
    finally:
        service.close()
