"""Votes on the Hugging Face Hub: start-up download, periodic push, final flush.

Spaces have no persistent disk, so the dataset repo is the durable store. Each
process keeps its local JSONL shard (fsynced, the record of what it acknowledged)
and a :class:`VoteUploader`, a ``CommitScheduler`` whose push sends the lines
added since the last successful push as one new Parquet file,
``data/<shard>-<n>.parquet``. Files are never rewritten once pushed (a failed
push is retried at the next tick under the same name with the same and newer
lines), so replicas never collide, compaction can roll files up while the Space
runs, and the whole repo is Parquet: ``datasets.load_dataset(repo)`` loads every
vote (it cannot mix JSONL and Parquet in one dataset).

The ``HfApi`` is injected everywhere (``hf_api=``), which is how the tests run
without the Hub.
"""

from __future__ import annotations

import hashlib
import logging
import signal
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, CommitScheduler, HfApi
from huggingface_hub.hf_api import RepoFile

from arena_core.dataset.card import REGISTRY_DIR, dataset_card
from arena_core.dataset.compact import CompactReport, compact
from arena_core.registry import Registry
from arena_core.votes.log import shard_in_use
from arena_core.votes.parquet import contract_table, parquet_bytes
from arena_core.votes.read import parse_jsonl, read_votes, vote_files

log = logging.getLogger(__name__)

#: Repo folder of the vote files.
DATA_DIR = "data"
#: Seconds the final flush may take on shutdown before we give up (Spaces kill at ~30 s).
FLUSH_TIMEOUT = 20.0


@dataclass
class SyncStatus:
    """What the page shows about the Hub: last successful push, votes waiting, last error."""

    last_push: datetime | None = None
    pushed_votes: int = 0
    waiting: int = 0
    last_error: str | None = None
    pulled_files: int = 0


class VoteUploader(CommitScheduler):
    """A CommitScheduler that pushes this process's new lines as a new Parquet file.

    Only this process's shard (``shard_name``) is pushed, so processes sharing a
    folder never push each other's votes. Hold :attr:`lock` while appending to
    the shard (the VoteLog is built with it), so a push never reads half a line.
    """

    def __init__(self, *, repo_id: str, folder_path: Path, shard_name: str, every: float,
                 hf_api: HfApi, token: str | None = None):  # fmt: skip
        self.shard_name = shard_name
        self._offset = 0  # bytes of the shard already pushed
        self._inode: int | None = None  # the shard file those bytes were in
        self._sequence = 0  # files pushed so far
        self._adopted: list[pa.Table] = []
        self.status = SyncStatus()
        super().__init__(repo_id=repo_id, repo_type="dataset", folder_path=folder_path,
                         path_in_repo=DATA_DIR, every=every, hf_api=hf_api, token=token)  # fmt: skip

    def adopt(self, files: list[Path], published_ids: set[str]) -> int:
        """Queue the votes of earlier local vote files that the Hub does not have yet.

        For a restart on a machine that kept its disk (shards and compacted
        files of earlier runs). Returns the number of votes queued.
        """
        known = pa.array(sorted(published_ids), type=pa.string())
        with self.lock:
            queued = 0
            for path in files:
                votes = read_votes(path)
                missing = votes.table.filter(pc.invert(pc.is_in(votes.column("vote_id"), known)))
                if missing.num_rows:
                    self._adopted.append(contract_table(missing))
                    queued += missing.num_rows
            self.status.waiting = queued + self._count_waiting()
            return queued

    def push_to_hub(self):
        """Send the shard's complete new lines; advance only after the commit succeeded."""
        with self.lock:  # the only time the shard is read: appends wait, uploads do not
            new, adopted = self._new_lines(), list(self._adopted)
        tables = list(adopted)
        if new is not None:
            tables.append(parse_jsonl(new[1], Counter()))
        if not tables:
            return None
        operations = []
        if new is not None:
            path = f"{DATA_DIR}/{Path(self.shard_name).stem}-{self._sequence + 1:06d}.parquet"
            operations.append(
                CommitOperationAdd(path_in_repo=path, path_or_fileobj=parquet_bytes(tables[-1]))
            )
        if adopted:
            table = pa.concat_tables(adopted)
            digest = hashlib.sha256(
                "\n".join(table.column("vote_id").to_pylist()).encode()
            ).hexdigest()
            operations.append(CommitOperationAdd(path_in_repo=f"{DATA_DIR}/adopted-{digest[:16]}.parquet",
                                                 path_or_fileobj=parquet_bytes(table)))  # fmt: skip
        votes = sum(t.num_rows for t in tables)
        try:
            info = self.api.create_commit(repo_id=self.repo_id, repo_type="dataset", operations=operations,
                                          commit_message=f"Add {votes} votes")  # fmt: skip
        except Exception as exc:
            with self.lock:
                self.status.last_error = f"{type(exc).__name__}: {exc}"
            log.error("push of %d votes failed; retrying at the next tick: %s", votes, exc)
            raise
        with self.lock:
            if new is not None:
                self._offset, self._sequence = new[0], self._sequence + 1
            self._adopted = self._adopted[len(adopted) :]
            self.status.last_push = datetime.now(UTC)
            self.status.pushed_votes += votes
            self.status.last_error = None
            self.status.waiting = self._count_waiting() + sum(t.num_rows for t in self._adopted)
        log.info("pushed %d votes to %s", votes, self.repo_id)
        return info

    def refresh_waiting(self) -> SyncStatus:
        """Recount the votes written locally but not pushed yet."""
        with self.lock:
            self.status.waiting = self._count_waiting() + sum(t.num_rows for t in self._adopted)
            return SyncStatus(**self.status.__dict__)

    def _new_lines(self) -> tuple[int, bytes] | None:
        """End offset and bytes of the shard's complete lines not pushed yet. Call under the lock."""
        shard = self.folder_path / self.shard_name
        if not shard.exists():  # created at the first vote
            return None
        inode = shard.stat().st_ino
        if inode != self._inode:  # first sight, or the file was replaced: start from its top
            self._inode, self._offset = inode, 0
        with shard.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        return (self._offset + cut, data[:cut]) if cut else None

    def _count_waiting(self) -> int:
        new = self._new_lines()
        return new[1].count(b"\n") if new else 0


class HubSync:
    """Everything the app does with the dataset repo.

    Examples
    --------
    >>> sync = HubSync("org/arena-votes", data_dir, hf_api=HfApi(token=token))  # doctest: +SKIP
    >>> mirror = sync.pull()                          # start-up: the repo's votes, as local files
    >>> shard = new_shard_name()
    >>> uploader = sync.start_uploads(shard)          # then write votes under its lock:
    >>> log = VoteLog(sync.votes_dir, lock=uploader.lock, shard_name=shard)
    """

    def __init__(self, repo_id: str, data_dir: Path, *, hf_api: HfApi, every_minutes: float = 5.0,
                 license_id: str = "cc-by-4.0", space_id: str = ""):  # fmt: skip
        self.repo_id = repo_id
        self.api = hf_api
        self.votes_dir = Path(data_dir) / "votes"
        self.mirror = Path(data_dir) / "hub"
        self.every = every_minutes
        self.license_id = license_id
        self.space_id = space_id
        self.uploader: VoteUploader | None = None
        self.pull_error: str | None = None

    def pull(self) -> Path:
        """Download the repo's vote files into the mirror folder (network errors are logged)."""
        try:
            self.api.snapshot_download(repo_id=self.repo_id, repo_type="dataset", local_dir=self.mirror,
                                       allow_patterns=[f"{DATA_DIR}/**", "README.md"])  # fmt: skip
        except Exception as exc:
            self.pull_error = f"{type(exc).__name__}: {exc}"
            log.error("could not download %s; replaying local votes only: %s", self.repo_id, exc)
        (self.mirror / DATA_DIR).mkdir(parents=True, exist_ok=True)
        return self.mirror / DATA_DIR

    def start_uploads(self, shard_name: str) -> VoteUploader:
        """Start the periodic push of this process's shard ``shard_name``.

        Vote files already in the folder (an earlier run on a machine that kept
        its disk) are adopted: their votes the Hub lacks are queued for the first
        push. Shards a running process holds are left to it; nothing is adopted
        when the download failed (the Hub's contents are unknown).
        """
        self.uploader = VoteUploader(repo_id=self.repo_id, folder_path=self.votes_dir, shard_name=shard_name,
                                     every=self.every, hf_api=self.api)  # fmt: skip
        earlier = [
            path
            for path, _ in (vote_files(self.votes_dir) if self.votes_dir.is_dir() else [])
            if path.name != shard_name and not shard_in_use(path)  # a live neighbour pushes its own
        ]
        if earlier and self.pull_error:
            log.warning(
                "not adopting %d local vote files: the Hub's copy could not be read", len(earlier)
            )
        elif earlier:
            published = set(
                read_votes(self.mirror / DATA_DIR, columns=["vote_id"])
                .column("vote_id")
                .to_pylist()
            )
            queued = self.uploader.adopt(earlier, published)
            log.info(
                "adopted %d local shards; %d of their votes were not on the Hub yet",
                len(earlier),
                queued,
            )
        return self.uploader

    def publish_card(self, registry: Registry) -> None:
        """Create or update the dataset card and the registry snapshot, if they changed."""
        card = dataset_card(self.repo_id, license_id=self.license_id, space_id=self.space_id,
                            arenas=tuple(a.id for a in registry.arenas))  # fmt: skip
        files = {"README.md": card.encode()}
        if registry.path is not None:
            base = registry.path.parent
            files[f"{REGISTRY_DIR}/registry.yaml"] = registry.path.read_bytes()
            for prompt_file in sorted({a.prompt_file for a in registry.arenas if a.prompt_file}):
                files[f"{REGISTRY_DIR}/{prompt_file.relative_to(base).as_posix()}"] = (
                    prompt_file.read_bytes()
                )
        changed = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=data)
            for name, data in files.items()
            if not (self.mirror / name).is_file() or (self.mirror / name).read_bytes() != data
        ]
        if changed:
            self.api.create_commit(repo_id=self.repo_id, repo_type="dataset", operations=changed,
                                   commit_message="Update dataset card and registry snapshot")  # fmt: skip

    def flush(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Push what is waiting now, then stop (a stopped scheduler would skip the atexit push)."""
        if self.uploader is None:
            return
        try:
            self.uploader.trigger().result(timeout=timeout)
        except Exception as exc:
            log.error("final push failed: %s", exc)
        self.uploader.stop()

    def flush_on_sigterm(self) -> None:
        """Spaces restart with SIGTERM, which skips ``atexit``: flush first, then exit."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("signal handlers can only be installed from the main thread")
        previous = signal.getsignal(signal.SIGTERM)

        def handler(signum, frame):
            log.info("SIGTERM: pushing waiting votes before exiting")
            self.flush()
            if callable(previous) and previous not in (signal.SIG_DFL, signal.SIG_IGN):
                previous(signum, frame)
            raise SystemExit(0)

        signal.signal(signal.SIGTERM, handler)

    def status(self) -> SyncStatus | None:
        if self.uploader is None:
            return None
        status = self.uploader.refresh_waiting()
        if self.pull_error and not status.last_error:
            status.last_error = f"start-up download failed ({self.pull_error})"
        return status


def compact_repo(
    api: HfApi, repo_id: str, workdir: Path, *, min_age_minutes: float
) -> CompactReport:
    """Compact the repo's vote files in one commit (monthly files added, sources deleted).

    Ages come from each file's last commit on the Hub, so files a live Space
    may still re-push are left alone.
    """
    now = datetime.now(UTC)
    tree = api.list_repo_tree(
        repo_id, path_in_repo=DATA_DIR, recursive=True, expand=True, repo_type="dataset"
    )
    ages = {
        entry.path.removeprefix(f"{DATA_DIR}/"): (now - entry.last_commit.date).total_seconds()
        for entry in tree
        if isinstance(entry, RepoFile) and entry.last_commit is not None
    }
    api.snapshot_download(repo_id=repo_id, repo_type="dataset", local_dir=workdir,
                          allow_patterns=[f"{DATA_DIR}/**"])  # fmt: skip
    data = Path(workdir) / DATA_DIR
    report = compact(data, min_age_minutes=min_age_minutes, ages=ages, delete=False)
    if not report.rolled:
        return report
    operations = [
        CommitOperationAdd(
            path_in_repo=f"{DATA_DIR}/{p.relative_to(data).as_posix()}", path_or_fileobj=p
        )
        for p in report.written
    ] + [
        CommitOperationDelete(path_in_repo=f"{DATA_DIR}/{p.relative_to(data).as_posix()}")
        for p in report.rolled
    ]
    api.create_commit(repo_id=repo_id, repo_type="dataset", operations=operations,
                      commit_message=f"Compact {report.votes} votes from {len(report.rolled)} files")  # fmt: skip
    return report
