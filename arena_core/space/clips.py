"""The battle clips the browser fetches: kept in memory, served by a route of the app's own.

Every battle delivers two freshly dithered clips under random names (``blinding``), and
each is fetched once or twice by the browser within seconds. Written into Gradio's cache
folder and served by Gradio's ``/file=`` route, a clip cost about 2.5 ms of the server's
CPU: a file write, path checks (each a ``realpath``) when the battle is sent, more path
checks and a file read when it is fetched. Under load that was a third of the server's
time per visit. Here a clip is bytes in a bounded store, and one route serves them.

The route sits at the URL Gradio itself gives such a file, ``/gradio_api/file=<folder>/<name>``
with ``<folder>`` a folder name under Gradio's cache that holds no files, so the page's
players, ``gradio_client`` (which downloads every file through ``/file=<path>``) and any
other client get the clip without knowing it is not a file. Requests for other files do
not match the route and reach Gradio's as before.

The response carries only what any clip's would (type, length, range): no modification
time, no entity tag, nothing that differs between models. A clip evicted by the memory
bound (the oldest go first) answers 404, as an expired file of Gradio's would.

Gradio records the path of every file a component sends (``Block.temp_files``, listed in
``Blocks.temp_file_sets``), and forgets one only when its clean-up deletes the file. A
clip's path is never a file, so that clean-up skipped it and kept it: two paths a battle,
for good (a month at a battle a second held five million, and every clean-up, every five
minutes, looked each up on disk). :meth:`ClipStore.forget_in` gives the store those
records: paths of clips it no longer holds are dropped from them as clips are put.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

#: Gradio's prefix for its API and file routes (``gradio.route_utils.API_PREFIX``).
API_PREFIX = "/gradio_api"
#: Random bytes in a clip's name: unguessable, so a name is its own access token.
NAME_BYTES = 16
#: Browsers may cache a clip for a day: its name is never reused, so it never changes.
CACHE_CONTROL = "private, max-age=86400, immutable"
#: Fewest puts between two passes over Gradio's records (:meth:`ClipStore.forget_in`); a pass
#: waits for as many puts as clips are held, so its cost, a look at every recorded path, is
#: a constant share of each put.
FORGET_EVERY = 16
_NAME = re.compile(r"[A-Za-z0-9_-]{16,64}\.wav")
_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)")


class ClipStore:
    """Clips by name, oldest evicted first once they hold more than ``max_bytes``.

    Parameters
    ----------
    folder : path
        The folder the clips seem to live in (a sub-folder of Gradio's cache, which
        Gradio accepts as a file it may serve); nothing is written there.
    max_bytes : int
        Memory bound. At 24 kHz a 5-second clip is 240 kB, so 256 MB holds the clips of
        about 500 battles: hours of a busy Space, seconds of a flood.

    Example::

        clips = ClipStore(Path(gradio_cache) / "arena-clips", 256 * 2**20)
        path = clips.put(wav_bytes)       # hand ``path`` to the audio player
        launch(app_kwargs={"routes": [clips.route()]})
    """

    def __init__(self, folder: str | Path, max_bytes: int):
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.folder = Path(folder).absolute()
        self.max_bytes = int(max_bytes)
        self._clips: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.evicted = 0
        self._records: Callable[[], Iterable[set]] = tuple
        self._puts = 0  # since the last pass over the records

    def forget_in(self, records: Callable[[], Iterable[set]]) -> None:
        """Drop the paths of clips no longer held from the sets ``records()`` returns (Gradio's
        records of the files it sent, ``lambda: demo.temp_file_sets``; see the module
        docstring), in a pass every :data:`FORGET_EVERY` puts or more. Any path a record
        names in the store's folder is a clip's (the folder holds no files)."""
        self._records = records

    def put(self, data: bytes) -> str:
        """Keep a WAV clip; the path to hand the player (its URL is Gradio's for that path)."""
        name = f"{secrets.token_urlsafe(NAME_BYTES)}.wav"
        with self._lock:
            self._clips[name] = data
            self._bytes += len(data)
            while self._bytes > self.max_bytes and len(self._clips) > 1:
                _, old = self._clips.popitem(last=False)
                self._bytes -= len(old)
                self.evicted += 1
            self._puts += 1
            held = None
            if self._puts >= max(FORGET_EVERY, len(self._clips)):
                self._puts, held = 0, set(self._clips)
        if held is not None:
            self._forget(held)
        return str(self.folder / name)

    def _forget(self, held: set[str]) -> None:
        """Drop from the records the paths in the folder of clips not in ``held``.

        A record is copied before it is read (one step, under the interpreter's lock) and
        changed in one step: Gradio adds to it from other threads meanwhile. A path Gradio
        records after its clip was evicted (a battle held back long under a flood) is
        dropped by the next pass."""
        prefix = os.path.join(os.path.abspath(self.folder), "")  # as Gradio writes the paths
        for record in list(self._records()):
            gone = [p for p in list(record)
                    if isinstance(p, str) and p.startswith(prefix) and p[len(prefix):] not in held]  # fmt: skip
            if gone:
                record.difference_update(gone)

    def get(self, name: str) -> bytes | None:
        with self._lock:
            return self._clips.get(name)

    def __len__(self) -> int:
        return len(self._clips)

    @property
    def size(self) -> int:
        """Bytes held."""
        return self._bytes

    def route(self) -> Route:
        """The route that serves the clips (GET and HEAD, single byte ranges)."""
        return Route(f"{API_PREFIX}/file={self.folder.as_posix()}/{{name}}", self._serve,
                     methods=["GET", "HEAD"])  # fmt: skip

    async def _serve(self, request: Request) -> Response:
        name = request.path_params["name"]
        data = self.get(name) if _NAME.fullmatch(name) else None
        if data is None:
            return Response("Clip not found (it may have expired).", status_code=404)
        return clip_response(data, request.headers.get("range"), head=request.method == "HEAD")


def clip_response(data: bytes, range_header: str | None, *, head: bool = False) -> Response:
    """The clip, or the one byte range asked for (206), as players seek with; 416 if unsatisfiable.

    Several ranges in one header are answered with the whole clip (200), which HTTP allows.
    """
    size = len(data)
    headers = {"accept-ranges": "bytes", "cache-control": CACHE_CONTROL}
    span = byte_range(range_header, size) if range_header else None
    if span == "unsatisfiable":
        headers["content-range"] = f"bytes */{size}"
        return Response(status_code=416, headers=headers)
    status, body = 200, data
    if span is not None:
        start, stop = span
        status, body = 206, data[start:stop]
        headers["content-range"] = f"bytes {start}-{stop - 1}/{size}"
    headers["content-length"] = str(len(body))
    return Response(b"" if head else body, status_code=status, headers=headers,
                    media_type="audio/wav")  # fmt: skip


def byte_range(header: str, size: int) -> tuple[int, int] | str | None:
    """``[start, stop)`` of a single ``Range: bytes=...`` header (RFC 9110, 14.1.2).

    ``None`` for a header to ignore (malformed, another unit, several ranges: the whole
    clip is sent), ``"unsatisfiable"`` for a range that starts past the end.
    """
    match = _RANGE.fullmatch(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":  # the last ``last`` bytes
        suffix = _position(last)
        return (max(0, size - suffix), size) if suffix > 0 and size > 0 else "unsatisfiable"
    start = _position(first)
    if start >= size:
        return "unsatisfiable"
    stop = size if last == "" else min(size, _position(last) + 1)
    if stop <= start:
        return None  # last < first: not a valid range; ignored
    return start, stop


def _position(digits: str) -> int:
    """A byte position of the header; past any clip's size when it has more digits than
    a clip can have (Python refuses to convert 4,300 digits or more: a 500 once)."""
    return int(digits) if len(digits) <= _MAX_DIGITS else 10**_MAX_DIGITS


#: Digits of the largest position read as it is (a clip is far below 10**18 bytes).
_MAX_DIGITS = 18
