"""A stand-in for the Hugging Face Hub, injected through ``hf_api=`` (the real Hub cannot be
reached from the test machine).

``LocalHubApi`` is an ``HfApi`` whose repo operations act on a local folder laid out
exactly like the dataset repo: ``create_commit`` writes and deletes files there,
``snapshot_download`` copies them out, ``list_repo_tree`` reports each file's last
commit date. It records every call, and can be told to fail the next commits.
"""

import fnmatch
import io
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.hf_api import CommitInfo, RepoFile, RepoUrl


class HubDownError(RuntimeError):
    """What a failing push raises."""


class LocalHubApi(HfApi):
    def __init__(self, root: Path):
        super().__init__(token="hf_test_token_not_used")
        self.root = Path(root)
        self.created: list[dict] = []
        self.commits: list[dict] = []
        self.fail_next = 0
        self.commit_dates: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def repo_dir(self, repo_id: str) -> Path:
        return self.root / repo_id.replace("/", "__")

    def create_repo(self, repo_id, *, repo_type=None, exist_ok=False, private=None, **kwargs):
        self.created.append({"repo_id": repo_id, "repo_type": repo_type, "exist_ok": exist_ok})
        self.repo_dir(repo_id).mkdir(parents=True, exist_ok=True)
        return RepoUrl(f"https://huggingface.co/datasets/{repo_id}")

    def create_commit(self, repo_id, operations, *, commit_message, repo_type=None, **kwargs):
        with self._lock:
            if self.fail_next:
                self.fail_next -= 1
                raise HubDownError("503 Service Unavailable (simulated)")
            repo = self.repo_dir(repo_id)
            files = {}
            for op in operations:
                if isinstance(op, CommitOperationAdd):
                    data = _bytes(op.path_or_fileobj)
                    target = repo / op.path_in_repo
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    files[op.path_in_repo] = data
                    self.commit_dates[op.path_in_repo] = datetime.now(UTC)
                elif isinstance(op, CommitOperationDelete):
                    (repo / op.path_in_repo).unlink()
                    files[op.path_in_repo] = None
            self.commits.append({"message": commit_message, "repo_type": repo_type, "files": files})
            oid = f"{len(self.commits):040x}"
            return CommitInfo(commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/{oid}",
                              commit_message=commit_message, commit_description="", oid=oid)  # fmt: skip

    def snapshot_download(
        self, repo_id, *, repo_type=None, local_dir=None, allow_patterns=None, **kwargs
    ):
        repo, out = self.repo_dir(repo_id), Path(local_dir)
        for path in sorted(p for p in repo.rglob("*") if p.is_file()):
            rel = path.relative_to(repo).as_posix()
            if allow_patterns and not any(fnmatch.fnmatch(rel, pat) for pat in allow_patterns):
                continue
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out / rel)
        (out / ".cache" / "huggingface").mkdir(
            parents=True, exist_ok=True
        )  # as the real one leaves
        return str(out)

    def list_repo_tree(
        self, repo_id, path_in_repo=None, *, recursive=False, expand=False, repo_type=None, **kw
    ):
        repo = self.repo_dir(repo_id)
        base = repo / (path_in_repo or "")
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            rel = path.relative_to(repo).as_posix()
            date = self.commit_dates.get(rel, datetime.now(UTC))
            yield RepoFile(path=rel, size=path.stat().st_size, oid="0" * 40,
                           last_commit={"id": "0" * 40, "title": "t", "date": date.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})  # fmt: skip


def _bytes(source) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, str | Path):
        return Path(source).read_bytes()
    if isinstance(source, io.IOBase):
        return source.read()
    raise TypeError(type(source))
