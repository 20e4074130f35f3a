"""Votes on the Hugging Face Hub: download, periodic push, final flush, and Hub outages.

Spaces have no persistent disk, so the dataset repo is the durable store. Each
process keeps its local JSONL shard (fsynced, the record of what it acknowledged)
and a :class:`~arena_core.dataset.uploader.VoteUploader` that pushes the lines
added since the last successful push as one new Parquet file,
``data/<shard>-<n>.parquet``. Files are never rewritten once pushed (a failed
push is retried at the next tick under the same name with the same and newer
lines), so replicas never collide, compaction can roll files up while the Space
runs, and every vote is in Parquet: ``datasets.load_dataset(repo)`` loads every
vote (it cannot mix JSONL and Parquet in one dataset; the card's config reads
Parquet only). The rare damaged lines of a push go beside it as they are
(``<shard>-<n>.damaged.jsonl``), so a replay of the repo skips and counts them as
the Space's replay of its shard does.

The Hub may be down when the Space starts. Then :class:`HubSync` lets the app
come up on its local log and keeps trying in the background; once the Hub
answers it downloads the repo (its local copy pruned to the repo's files),
starts the pushes (adopting local votes the repo lacks, see
:mod:`~arena_core.dataset.earlier`), hands the votes to the app (``on_download``)
and publishes the card.

The ``HfApi`` is injected everywhere (``hf_api=``), which is how the tests run
without the Hub. The command line's one-off operations on the repo (a revision's
download, compaction) are in :mod:`~arena_core.dataset.repo`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi

from arena_core.dataset import shutdown
from arena_core.dataset.card import card_files
from arena_core.dataset.earlier import EarlierFiles, prune_mirror
from arena_core.dataset.uploader import (
    DATA_DIR,
    CommitTracking,
    LineCount,
    SyncStatus,
    VoteUploader,
    utc_now,
)
from arena_core.registry import Registry
from arena_core.votes.hold import ADOPTED_PREFIX
from arena_core.votes.log import VoteLog

__all__ = ["DATA_DIR", "HubSync", "SyncStatus", "VoteUploader"]

log = logging.getLogger(__name__)

#: Seconds the final flush may take on shutdown before we give up (Spaces kill at ~30 s).
FLUSH_TIMEOUT = 20.0
#: Longest wait, in seconds, between two attempts to reach a Hub that did not answer at
#: start-up (shorter when pushes are more frequent): a minute of delay after an outage,
#: one request a minute during it.
RECONNECT_SECONDS = 60.0


class HubSync:
    """Everything the app does with the dataset repo.

    Parameters
    ----------
    repo_id, data_dir : the dataset repo, and the local folder of ``votes/`` and ``hub/``.
    hf_api : HfApi
        Injected; tests pass a stand-in.
    every_minutes : float
        Minutes between pushes.
    license_id, space_id : written in the dataset card.
    clock : callable, optional
        Current UTC datetime, for the status times (injected by tests).
    retry_seconds : float, optional
        Wait between attempts to reach the Hub (default: the push interval,
        at most :data:`RECONNECT_SECONDS`).

    Examples
    --------
    >>> sync = HubSync("org/arena-votes", data_dir, hf_api=HfApi(token=token))  # doctest: +SKIP
    >>> shard = new_shard_name()
    >>> log = VoteLog(sync.votes_dir, lock=sync.lock, shard_name=shard)  # votes go here at once
    >>> sync.start(log, registry=registry, on_download=service.reload)  # never raises
    False
    >>> sync.status().unreachable_since  # the Hub refused; retried every minute
    datetime.datetime(2026, 11, 29, 17, 5, tzinfo=datetime.timezone.utc)
    """

    def __init__(self, repo_id: str, data_dir: Path, *, hf_api: HfApi, every_minutes: float = 5.0,
                 license_id: str = "cc-by-4.0", space_id: str = "",
                 clock: Callable[[], datetime] = utc_now, retry_seconds: float | None = None):  # fmt: skip
        self.repo_id = repo_id
        self.api = hf_api
        self.votes_dir = Path(data_dir) / "votes"
        self.mirror = Path(data_dir) / "hub"
        self.every = every_minutes
        self.license_id = license_id
        self.space_id = space_id
        self.retry_seconds = (
            retry_seconds
            if retry_seconds is not None
            else min(60 * every_minutes, RECONNECT_SECONDS)
        )
        #: The VoteLog's lock, in force from the first vote; the uploader reads under it.
        #: Reentrant, so the app can move the log's clock while it holds it (ArenaService.reload).
        self.lock = threading.RLock()
        self.uploader: VoteUploader | None = None
        self.vote_log: VoteLog | None = None
        self.registry: Registry | None = None
        self.on_download: Callable[[], object] | None = None
        self._clock = clock
        self._shard: str | None = None
        self.earlier: EarlierFiles | None = None
        self._unpushed: LineCount | None = None
        self._error: str | None = None
        self._since: datetime | None = None
        self._connecting = threading.Lock()
        self._stopped = threading.Event()
        #: The repo's commit the downloaded votes came from (None until the Hub answered).
        self.commit: str | None = None

    @property
    def hub_votes(self) -> Path:
        """The local copy of the repo's vote files (replayed with the local ones)."""
        return self.mirror / DATA_DIR

    def start(self, vote_log: VoteLog, *, registry: Registry | None = None,
              on_download: Callable[[], object] | None = None) -> bool:  # fmt: skip
        """Connect now, or keep trying in the background; True if the Hub answered now.

        ``vote_log`` is this process's log: its shard in :attr:`votes_dir` is pushed, and
        :meth:`flush` closes it. It must write under :attr:`lock`, or a push could read
        half a line. The log is followed (:meth:`VoteLog.follow`) from here, before the Hub
        answers: a file it stops writing (the shard deleted) waits for the first push. ``on_download`` is called after the repo's votes
        are in :attr:`hub_votes` (the app replays them); ``registry``, when
        given, is published with the card. Nothing here raises on a Hub error:
        a Space that restarts during a Hub outage must still take votes.
        """
        if vote_log.lock is not self.lock:
            raise ValueError("the vote log must write under HubSync.lock")
        self.vote_log, self._shard = vote_log, vote_log.path.name
        vote_log.follow()  # from now: a file it stops writing waits for the uploader
        self.registry, self.on_download = registry, on_download
        self._unpushed = LineCount(self.votes_dir / self._shard)
        self.earlier = EarlierFiles(self.votes_dir, self._shard, self.hub_votes)
        self.hub_votes.mkdir(parents=True, exist_ok=True)
        if self.connect():
            return True
        threading.Thread(target=self._keep_trying, name="hub-connect", daemon=True).start()
        return False

    def connect(self) -> bool:
        """Create the repo if needed, download it, then start pushing and publish the card.

        Returns False, with the error kept for :meth:`status`, if the Hub did
        not answer; votes keep going to the local shard and the next attempt
        starts over. Safe to call from several threads; True once connected.
        """
        if self._shard is None:
            raise RuntimeError("HubSync.start() names the shard before connect()")
        with self._connecting:
            if self.uploader is not None:
                return True
            try:
                self.api.create_repo(self.repo_id, repo_type="dataset", exist_ok=True)
                withdrawn = self._download()
            except Exception as exc:  # refused, offline, timed out, 5xx: all mean "later"
                return self._failed("download", exc)
            base, published = self._publish_registry()
            try:  # CommitScheduler's constructor calls create_repo too
                uploader = CommitTracking(base=base, registry_published=published,
                                        before_push=self._before_push,
                                        repo_id=self.repo_id, folder_path=self.votes_dir,
                                        shard_name=self._shard, every=self.every, hf_api=self.api,
                                        lock=self.lock, clock=self._clock,
                                        retired=self.vote_log.take_retired)  # fmt: skip
            except Exception as exc:
                return self._failed("start pushing to", exc)
            try:  # before the replay: the files it sets aside are not replayed
                self.earlier.connect(uploader, withdrawn)
            except Exception:  # start() never raises: this run's votes must still be pushed
                log.exception("could not adopt the earlier local vote files")
            if self.on_download is not None:
                try:
                    self.on_download()
                except Exception:  # the board lags, but the votes must still be pushed
                    log.exception("could not replay the votes downloaded from %s", self.repo_id)
            self.uploader = uploader
            self._error = self._since = None
        log.info("connected to %s: pushing votes every %g minutes", self.repo_id, self.every)
        return True

    def _publish_registry(self) -> tuple[str | None, bool | None]:
        """Publish the card and the registry before the first push; the commit the boards
        name until then (the card's commit when one was made, else the downloaded one) and
        whether it holds this run's registry (None: no registry file to publish).

        The boards are rated with this run's registry, and ``leaderboard --repo --revision``
        replays with the registry the commit holds. Published after the pushes started (as
        before session 32), the card's commit was never the boards' revision: they named the
        downloaded commit, which holds the previous deploy's registry (or none), until this
        run's first push, and the printed command replayed other models and priors. The
        card's commit holds the downloaded votes and nothing of this run yet.

        When the publish fails the votes go on, but the boards' commit lacks the registry
        they are rated with: the revision says so (``registry_published: false``, the page
        withdraws its claim) and the publish is retried before each push
        (:meth:`_retry_publish`) until it lands.
        """
        if self.registry is None:
            return self.commit, None
        has_file = None if self.registry.path is None else True  # None: nothing to replay with
        try:
            return self.publish_card(self.registry) or self.commit, has_file
        except Exception as exc:  # the votes cannot wait for the card
            log.error("could not update the dataset card and publish the registry (%s); the "
                      "boards name %s, which lacks this run's registry, until a retry before a "
                      "push lands", exc, self.commit)  # fmt: skip
            return self.commit, None if has_file is None else False

    def _before_push(self, uploader: CommitTracking) -> None:
        self._adopt_released(uploader)
        self._retry_publish(uploader)

    def _retry_publish(self, uploader: CommitTracking) -> None:
        """Before a push: publish the card and registry again if the last attempt failed.
        Once it lands, the boards name its commit, which holds every vote the commit they
        named held (later commits keep it, so every later push holds the registry too)."""
        if uploader.pushed_commit[3] is not False:
            return
        try:
            made = self.publish_card(self.registry)
        except Exception as exc:  # the push goes on; the next tick tries again
            log.error("could not update the dataset card and publish the registry (%s); "
                      "retrying at the next push", exc)  # fmt: skip
            return
        uploader.renamed(made, registry_published=True)
        log.info("published the dataset card and registry of %s at %s", self.repo_id, made)

    def _download(self) -> set[str]:
        """Make :attr:`mirror` the repo's vote files and card at its current commit; the ids
        of the votes of local files the repo no longer holds (see :func:`prune_mirror`).

        The commit is asked for first: when it cannot reach the Hub,
        ``snapshot_download`` returns a local folder that already has files
        with only a warning, and a stale copy must not pass for the Hub's. It never
        deletes a local file, so the files deleted or compacted on the Hub since the
        last download are removed here, after listing the repo at that commit.
        """
        sha = self.api.repo_info(self.repo_id, repo_type="dataset").sha
        self.api.snapshot_download(repo_id=self.repo_id, repo_type="dataset", revision=sha,
                                   local_dir=self.mirror, allow_patterns=[f"{DATA_DIR}/**", "README.md"])  # fmt: skip
        listed = self.api.list_repo_files(self.repo_id, repo_type="dataset", revision=sha)
        self.hub_votes.mkdir(parents=True, exist_ok=True)
        with self.lock:  # a replay under the lock never sees half the removal
            withdrawn = prune_mirror(self.mirror, DATA_DIR, listed, also=["README.md"])
        self.commit = sha
        return withdrawn

    def revision(self) -> dict:
        """``repo``, ``commit`` (the last commit of this process's votes, or the one
        downloaded), ``unpushed`` (local votes of the board not in it: this process's
        lines since that push, adopted earlier votes still queued, and those of a live
        neighbour's shard that the downloaded copy lacks) and ``registry_published``
        (whether that commit's ``registry/`` is the registry the boards are rated with:
        False while publishing it has failed; None without a registry file). Call under
        :attr:`lock`, as the vote log's lines are counted. With several processes pushing
        to one repo a later commit may also hold their votes; one Space writes alone.
        """
        uploader = self.uploader
        if uploader is None or self._unpushed is None:
            return {"repo": self.repo_id, "commit": None, "unpushed": None,
                    "registry_published": None}  # fmt: skip
        commit, pushed, adopted, published = uploader.pushed_commit
        lines = self._unpushed.update()
        return {
            "repo": self.repo_id,
            "commit": commit,
            "unpushed": max(0, lines - pushed) + adopted + self.earlier.held_votes,
            "registry_published": published,
        }

    def upload(self, files: dict[str, bytes], message: str) -> str:
        """Commit ``files`` (repo path -> bytes) in one commit; its id. Raises on a Hub error."""
        operations = [
            CommitOperationAdd(path_in_repo=k, path_or_fileobj=v) for k, v in files.items()
        ]
        info = self.api.create_commit(repo_id=self.repo_id, repo_type="dataset",
                                      operations=operations, commit_message=message)  # fmt: skip
        return info.oid

    def _failed(self, action: str, exc: Exception) -> bool:
        self._error = f"{type(exc).__name__}: {exc}"
        self._since = self._since or self._clock()
        log.error("could not %s %s (%s); votes stay in %s, next attempt in %g s",
                  action, self.repo_id, self._error, self.votes_dir, self.retry_seconds)  # fmt: skip
        return False

    def _keep_trying(self) -> None:
        while not self._stopped.wait(self.retry_seconds):
            if self.connect():
                return

    def _adopt_released(self, uploader: CommitTracking) -> None:
        """Before each push: adopt the files a live neighbour held at connect and has let go
        since (:meth:`EarlierFiles.released`), replay again, and name the commit its pushes
        were fetched at (it holds the local copy and this process's pushes). A Hub error
        waits for the next push. At the final push (:meth:`flush`) the files are adopted, so
        their votes go with it, but nothing is replayed: a full replay under the vote lock
        ate into the flush's 20 s."""
        try:
            if not self.earlier.released(uploader, self._fetch_pushed):
                return
        except Exception:
            log.exception("could not adopt the vote files a neighbouring process left")
            return
        if self._stopped.is_set():  # the final push: no board to serve, and its time is short
            return
        if self.on_download is not None:
            try:
                self.on_download()
            except Exception:  # the board lags, but the votes must still be pushed
                log.exception("could not replay the votes after a neighbour's exit")
                return
        # Named once the boards hold those votes: before, the revision named the new commit
        # while the old board was still served.
        uploader.renamed(self.commit)

    def _fetch_pushed(self, stems: list[str]) -> None:
        """Add to the local copy the repo's files pushed from the shards ``stems`` by their
        own processes (after this one's download, too), and every adoption's file (a
        neighbour's adopted votes, locked until pushed, go under a name of their own:
        :func:`~arena_core.dataset.uploader.adopted_file`), at the current commit:
        :attr:`commit`."""
        sha = self.api.repo_info(self.repo_id, repo_type="dataset").sha
        patterns = [f"{DATA_DIR}/{stem}-*" for stem in stems] + [f"{DATA_DIR}/{ADOPTED_PREFIX}*"]
        self.api.snapshot_download(repo_id=self.repo_id, repo_type="dataset", revision=sha,
                                   local_dir=self.mirror, allow_patterns=patterns)  # fmt: skip
        self.commit = sha

    def publish_card(self, registry: Registry) -> str | None:
        """Create or update the dataset card and the registry snapshot, if they changed; the
        commit made (None when nothing changed)."""
        files = card_files(self.repo_id, registry, license_id=self.license_id,
                           space_id=self.space_id)  # fmt: skip
        changed = [
            CommitOperationAdd(path_in_repo=name, path_or_fileobj=data)
            for name, data in files.items()
            if not (self.mirror / name).is_file() or (self.mirror / name).read_bytes() != data
        ]
        if not changed:
            return None
        info = self.api.create_commit(repo_id=self.repo_id, repo_type="dataset", operations=changed,
                                      commit_message="Update dataset card and registry snapshot")  # fmt: skip
        return info.oid

    def flush(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Close the vote log, push what is waiting, then stop (a stopped scheduler would skip
        the atexit push).

        The log is closed first (:meth:`VoteLog.refuse`): a vote acknowledged after the
        final push read the shard was never pushed, and the process exits right after
        this. Later votes are refused, the visitor asked to vote again in a minute. If
        the Hub has not answered yet, one more attempt is made within ``timeout``: on a
        Space the local disk goes with the process.
        """
        deadline = time.monotonic() + timeout
        self._stopped.set()
        if self.vote_log is not None:
            self.vote_log.refuse("the server is shutting down: its last push is under way")
        if self.uploader is None and self._shard is not None:
            try:
                self.api.run_as_future(self.connect).result(timeout=timeout)
            except Exception as exc:
                log.error("last attempt to reach %s failed: %s", self.repo_id, exc)
        if self.uploader is None:
            log.error("the Hub never answered: %d votes were not pushed and stay only in %s",
                      self.status().waiting, self.votes_dir)  # fmt: skip
            return
        try:
            self.uploader.trigger().result(timeout=max(0.0, deadline - time.monotonic()))
        except Exception as exc:
            log.error("final push failed: %s", exc)
        self.uploader.stop()

    def flush_on_sigterm(self) -> None:
        """Spaces restart with SIGTERM, which skips ``atexit``: :meth:`flush` first, then exit
        (:func:`~arena_core.dataset.shutdown.flush_on_sigterm`). Main thread only."""
        shutdown.flush_on_sigterm(self.flush)

    def status(self) -> SyncStatus:
        """Last push, votes waiting, and since when the Hub has not answered, if it has not."""
        if self.uploader is not None:
            return self.uploader.refresh_waiting()
        with self.lock:
            waiting = self._unpushed.update() if self._unpushed is not None else 0
        return SyncStatus(waiting=waiting, last_error=self._error, unreachable_since=self._since)
