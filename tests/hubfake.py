"""Stand-ins for the Hugging Face Hub (the real Hub cannot be reached from the test machine).

``LocalHubApi`` is an ``HfApi`` whose repo operations act on a local folder laid out
exactly like the dataset repo: ``create_commit`` writes and deletes files there,
``snapshot_download`` copies them out, ``list_repo_tree`` reports each file's last
commit date. It records every call. ``down`` makes every call raise (the Hub refusing
connections), ``failures`` makes the next commits fail one by one, with the errors the
real client raises (:func:`refused`, :func:`unavailable`, :func:`timed_out`); a
:class:`Landed` failure applies the commit first, as when the Hub took it and the
answer was lost.

``HubServer`` serves, on 127.0.0.1, the part of the Hub's HTTP API that the real
``HfApi`` (built with ``endpoint=server.url``) uses to create the repo, download it
and commit to it, over a ``LocalHubApi`` folder. Until :meth:`HubServer.start` its
port is closed, so the real client fails exactly as against a Hub that refuses
connections.
"""

import base64
import fnmatch
import hashlib
import io
import json
import shutil
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import httpx2
import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.hf_api import CommitInfo, RepoFile, RepoUrl
from huggingface_hub.utils import hf_raise_for_status

from arena_core.dataset.hub import HubSync
from arena_core.votes.log import VoteLog, new_shard_name
from arena_core.votes.parquet import write_parquet
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS


class HubDownError(RuntimeError):
    """What a failing push raises when a test does not care which error it is."""


def refused() -> Exception:
    """What ``HfApi`` raises when nothing listens on the Hub's address."""
    return httpx2.ConnectError("[Errno 111] Connection refused")


def unavailable() -> Exception:
    """What ``HfApi`` raises when the Hub answers 503 (built by the client's own code)."""
    request = httpx2.Request("POST", "https://huggingface.co/api/datasets/org/x/commit/main")
    try:
        hf_raise_for_status(httpx2.Response(503, request=request, text="Service Unavailable"))
    except Exception as exc:
        return exc
    raise AssertionError("hf_raise_for_status accepted a 503")


def moved_on(repo_id: str, parent_commit: str) -> Exception:
    """The Hub's answer to a commit whose ``parent_commit`` is no longer the head (412),
    built by the client's own code."""
    request = httpx2.Request("POST", f"https://huggingface.co/api/datasets/{repo_id}/commit/main")
    text = f"A commit has happened since {parent_commit}. Please refresh and try again."
    try:
        hf_raise_for_status(httpx2.Response(412, request=request, text=text))
    except Exception as exc:
        return exc
    raise AssertionError("hf_raise_for_status accepted a 412")


def timed_out() -> Exception:
    return httpx2.ReadTimeout("The read operation timed out")


@dataclass
class Landed:
    """A failure raised after the commit was applied (the Hub's answer was lost)."""

    error: Exception


class LocalHubApi(HfApi):
    def __init__(self, root: Path):
        super().__init__(token="hf_test_token_not_used")
        self.root = Path(root)
        self.created: list[dict] = []
        self.commits: list[dict] = []
        self.failures: list = []
        self.down: Exception | None = None
        self.commit_dates: dict[str, datetime] = {}
        # A commit lands whole or not at all for the Hub's readers; here every reader (the
        # server's routes, snapshot_download, the tests' raw_vote_ids) takes this lock, which
        # a commit holds while it writes. Without it a test read a Parquet file the commit
        # had created but not yet filled ("Parquet file size is 0 bytes", CI of session 35).
        self._lock = threading.RLock()

    def reading(self) -> threading.RLock:
        """Hold while reading the store: no commit is half written meanwhile."""
        return self._lock

    @property
    def fail_next(self) -> int:
        return len(self.failures)

    @fail_next.setter
    def fail_next(self, n: int) -> None:
        self.failures = [HubDownError("503 Service Unavailable (simulated)") for _ in range(n)]

    def _reach(self) -> None:
        if self.down is not None:
            raise self.down

    def repo_dir(self, repo_id: str) -> Path:
        return self.root / repo_id.replace("/", "__")

    def head(self, repo_id: str) -> str:
        """The repo's current commit id: one per commit, as on the Hub."""
        return f"{len(self.commits) + 1:040x}"

    def create_repo(self, repo_id, *, repo_type=None, exist_ok=False, private=None, **kwargs):
        self._reach()
        self.created.append({"repo_id": repo_id, "repo_type": repo_type, "exist_ok": exist_ok})
        self.repo_dir(repo_id).mkdir(parents=True, exist_ok=True)
        return RepoUrl(f"https://huggingface.co/datasets/{repo_id}")

    def repo_info(self, repo_id, *, repo_type=None, revision=None, **kwargs):
        self._reach()
        return SimpleNamespace(id=repo_id, sha=self.head(repo_id))

    def create_commit(self, repo_id, operations, *, commit_message, repo_type=None,
                      parent_commit=None, **kwargs):  # fmt: skip
        self._reach()
        with self._lock:
            if parent_commit is not None and parent_commit != self.head(repo_id):
                raise moved_on(repo_id, parent_commit)
            failure = self.failures.pop(0) if self.failures else None
            if isinstance(failure, Exception):
                raise failure
            info = self._apply(repo_id, operations, commit_message, repo_type)
        if isinstance(failure, Landed):
            raise failure.error
        return info

    def _apply(self, repo_id, operations, commit_message, repo_type) -> CommitInfo:
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
        self._reach()
        repo, out = self.repo_dir(repo_id), Path(local_dir)
        with self.reading():
            for path in sorted(p for p in repo.rglob("*") if p.is_file()):
                rel = path.relative_to(repo).as_posix()
                if allow_patterns and not any(fnmatch.fnmatch(rel, p) for p in allow_patterns):
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
        self._reach()
        repo = self.repo_dir(repo_id)
        base = repo / (path_in_repo or "")
        with self.reading():
            found = [(p.relative_to(repo).as_posix(), p.stat().st_size)
                     for p in sorted(base.rglob("*")) if p.is_file()]  # fmt: skip
        for rel, size in found:
            date = self.commit_dates.get(rel, datetime.now(UTC))
            yield RepoFile(path=rel, size=size, oid="0" * 40,
                           last_commit={"id": "0" * 40, "title": "t", "date": date.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})  # fmt: skip


def _bytes(source) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, str | Path):
        return Path(source).read_bytes()
    if isinstance(source, io.IOBase):
        return source.read()
    raise TypeError(type(source))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HubServer:
    """The Hub's HTTP API on 127.0.0.1, as far as ``HfApi`` needs it for this app.

    Routes: ``POST /api/repos/create``, ``GET /api/datasets/<repo>/revision/<rev>``,
    ``GET /api/datasets/<repo>/tree/<rev>``, ``HEAD``/``GET /datasets/<repo>/resolve/<rev>/<path>``,
    ``POST /api/datasets/<repo>/preupload/<rev>`` (every file "regular", sent inline),
    ``POST /api/datasets/<repo>/commit/<rev>`` and ``POST /api/validate-yaml``. Every
    request is recorded in :attr:`requests` as ``(method, path)``. With
    :attr:`failing_reads` set to a status code, every read (GET, HEAD) answers it.
    """

    def __init__(self, root: Path):
        self.store = LocalHubApi(root)
        # The port is bound now and listened on from start(): until then connections are
        # refused, and no other socket can take the port (a port merely found free was
        # taken now and then by a client connection of a parallel test, and start() failed).
        self._reserved = socket.socket()
        self._reserved.bind(("127.0.0.1", 0))
        self.port = self._reserved.getsockname()[1]
        self.requests: list[tuple[str, str]] = []
        self.failing_reads: int | None = None
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self),
                                           bind_and_activate=False)  # fmt: skip
        self._server.socket.close()
        self._server.socket = self._reserved  # already bound to self.port
        self._server.server_activate()
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._reserved.close()


def _handler(hub: HubServer):
    store = hub.store

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep the test output quiet
            pass

        def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head=False):
            self.send_response(status)
            for key, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _json(self, status: int, value, headers: dict | None = None):
            body = json.dumps(value).encode()
            self._send(status, body, {"Content-Type": "application/json", **(headers or {})})

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _route(self, method: str):
            path = urlsplit(self.path).path
            hub.requests.append((method, path))
            if hub.failing_reads and method in ("GET", "HEAD"):
                return self._json(hub.failing_reads, {"error": "simulated"})
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "repos"] and method == "POST":
                return self._create(json.loads(self._body()))
            if parts[:2] == ["api", "validate-yaml"]:
                self._body()
                return self._json(200, {"errors": [], "warnings": []})
            if parts[:2] == ["api", "datasets"] and len(parts) in (4, *range(6, 99)):
                parts += ["revision", "main"] if len(parts) == 4 else []  # repo_info of the default
                repo_id, action, rest = f"{parts[2]}/{parts[3]}", parts[4], parts[6:]
                if not store.repo_dir(repo_id).is_dir():
                    return self._json(404, {"error": "Repository not found"},
                                      {"X-Error-Code": "RepoNotFound"})  # fmt: skip
                return getattr(self, f"_{action}")(repo_id, "/".join(rest))
            if len(parts) > 5 and parts[0] == "datasets" and parts[3] == "resolve":
                return self._resolve(
                    f"{parts[1]}/{parts[2]}", "/".join(parts[5:]), method == "HEAD"
                )
            return self._json(404, {"error": f"no route {method} {path}"})

        def do_GET(self):
            self._route("GET")

        def do_HEAD(self):
            self._route("HEAD")

        def do_POST(self):
            self._route("POST")

        def _create(self, payload):
            repo_id = f"{payload['organization']}/{payload['name']}"
            url = f"{hub.url}/datasets/{repo_id}"
            if store.repo_dir(repo_id).is_dir():  # the Hub names the repo in its 409 too
                return self._json(
                    409, {"error": "You already created this dataset repo", "url": url}
                )
            store.create_repo(repo_id, repo_type=payload.get("type"), exist_ok=False)
            return self._json(200, {"url": url})

        def _revision(self, repo_id, _):
            files = _files(store, repo_id)
            return self._json(200, {"id": repo_id, "sha": store.head(repo_id), "private": False,
                                    "siblings": [{"rfilename": rel} for rel in files]})  # fmt: skip

        def _tree(self, repo_id, prefix):
            entries = [
                {"type": "file", "path": rel, "size": len(data), "oid": _oid(data)}
                for rel, data in _files(store, repo_id).items()
                if rel.startswith(prefix)
            ]
            return self._json(200, entries)

        def _resolve(self, repo_id, rel, head):
            target = store.repo_dir(repo_id) / rel
            with store.reading():
                data = target.read_bytes() if target.is_file() else None
            if data is None:
                return self._json(404, {"error": "Entry not found"},
                                  {"X-Error-Code": "EntryNotFound"})  # fmt: skip
            headers = {"X-Repo-Commit": store.head(repo_id), "ETag": f'"{_oid(data)}"'}
            return self._send(200, data, headers, head=head)

        def _preupload(self, repo_id, _):
            files = json.loads(self._body())["files"]
            modes = [
                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
            ]
            return self._json(200, {"files": modes})

        def _commit(self, repo_id, _):
            lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
            message, operations = "", []
            for line in lines:
                value = line["value"]
                if line["key"] == "header":
                    message = value["summary"]
                elif line["key"] == "file":
                    data = base64.b64decode(value["content"])
                    operations.append(
                        CommitOperationAdd(path_in_repo=value["path"], path_or_fileobj=data)
                    )
                elif line["key"] == "deletedFile":
                    operations.append(CommitOperationDelete(path_in_repo=value["path"]))
            info = store.create_commit(
                repo_id, operations, commit_message=message, repo_type="dataset"
            )
            return self._json(200, {"commitUrl": f"{hub.url}/datasets/{repo_id}/commit/{info.oid}",
                                    "commitOid": info.oid, "pullRequestUrl": None})  # fmt: skip

    return Handler


def _files(store: LocalHubApi, repo_id: str) -> dict[str, bytes]:
    repo = store.repo_dir(repo_id)
    with store.reading():
        return {
            p.relative_to(repo).as_posix(): p.read_bytes()
            for p in sorted(repo.rglob("*"))
            if p.is_file()
        }


def _oid(data: bytes) -> str:
    """A git blob id, as the Hub reports for files stored in git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# -- helpers shared by the Hub tests --------------------------------------------------------

REPO = "org/arena-votes"
# Three real eSpeak NG voices: fast, installed from PyPI, no network.
REGISTRY = """
arenas:
  - id: speech
    title: Speech
    modality: audio
    prompts: prompts.yaml
    models:
      - {id: espeak/en-us, name: US, backend: {type: espeak, voice: en-us}}
      - {id: espeak/en-gb, name: GB, backend: {type: espeak, voice: en-gb-x-rp}}
      - {id: espeak/en+klatt, name: Klatt, backend: {type: espeak, voice: en+klatt}}
"""
PROMPTS = "- {id: p1, text: One two three., category: numbers}\n- {id: p2, text: Good morning., category: short}\n"


def repo_votes(api, **kwargs):
    """The votes in the stand-in's copy of the repo, deduplicated by vote_id."""
    with api.reading():
        return read_votes(api.repo_dir(REPO) / "data", **kwargs)


def raw_vote_ids(api) -> Counter:
    """How many times each vote_id appears across the repo's files (no deduplication)."""
    with api.reading():
        files = sorted((api.repo_dir(REPO) / "data").glob("**/*.parquet"))
        return Counter(
            v for f in files for v in pq.read_table(f, columns=["vote_id"])["vote_id"].to_pylist()
        )


def write_votes(path: Path, rows) -> None:
    table = pa.Table.from_pylist(rows, schema=pa.schema([pa.field(f.name, f.type) for f in FIELDS]))
    write_parquet(table, path)


def seed_repo(api, rows):
    write_votes(api.repo_dir(REPO) / "data" / "votes-earlier-000001.parquet", rows)


def row(k, a="espeak/en-us", b="espeak/en-gb", vote="a"):
    return {"schema_version": 1, "vote_id": f"00000000-0000-4000-8000-{k:012d}", "battle_id": None,
            "ts": f"2026-10-01T00:00:{k:02d}.000Z", "arena": "speech", "model_a": a, "model_b": b,
            "vote": vote, "prompt_id": None, "prompt": None, "category": None, "voter": "x",
            "voter_kind": "human", "judge": None, "flags": []}  # fmt: skip


def writer(data_dir, api, **kwargs):
    """One process's sync and log, wired as build_service wires them."""
    kwargs.setdefault("every_minutes", 60)
    sync = HubSync(REPO, data_dir, hf_api=api, **kwargs)
    shard = new_shard_name()
    log = VoteLog(sync.votes_dir, lock=sync.lock, shard_name=shard)
    sync.start(log)
    return sync, log


def speech_vote(log, choice="a") -> str:
    """One vote of REGISTRY's speech arena into ``log``; its id."""
    return log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb",
                      vote=choice).vote_id  # fmt: skip


def pushing(tmp_path, **kwargs):
    """A process's Hub stand-in, sync and log whose pushes happen only when a test asks."""
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api, **kwargs)
    settled(sync).uploader.stop()
    return api, sync, log


def settled(sync):
    """Wait for CommitScheduler's first tick (it pushes once as its thread starts), so the
    pushes a test triggers are the only ones and their numbering is known."""
    uploader = sync.uploader
    deadline = time.monotonic() + 30
    while not hasattr(uploader, "last_future"):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    uploader.last_future.result()
    return sync
