"""A bounded on-disk cache of generated outputs, so replayed prompt-set battles are instant.

Entries are keyed by (model id, prompt text, prompt language, backend version):
a new engine or voice version, or changed options, produce a new key, so stale
audio is never served. Each entry is one file holding the output losslessly
(``.wav`` 16-bit PCM, ``.txt`` UTF-8, or the image as received).

File names are an HMAC of the key under a random secret kept in the cache
directory (``.secret``), so a name reveals nothing: not the model, and not even
which model made it for someone who knows the model ids and the prompt (a plain
hash could be recomputed). Cache paths are still server-side only; give the
browser :meth:`Output.save` copies.

**Memory.** With ``memory_bytes``, the most recently used outputs are also kept
in memory (outputs are immutable, so one object serves every battle): a battle
on a set prompt then reads no file at all. Under load, disk reads and WAV
decoding were a quarter of a battle's server time.

Concurrency: writes go to a temporary file, synced to disk, then :func:`os.replace`, so
readers (threads or other processes), and a restart after a crash, see a whole file or none. A read refreshes the
file's modification time, which serves as its last-access time (entries the memory layer
holds count as more recent than the rest); when the total
size exceeds ``max_bytes``, the least recently used files are deleted down to
:data:`LOW_WATER` of the budget. A folder removed at run time is made again by the next write. A file evicted or corrupted under a reader is
a miss, never an error.

**Damage.** The folder is kept across restarts, so anything may be found in it: an
entry cut short (a crash before the disk had the whole file, a copy interrupted),
a folder or a link named like an entry, a damaged secret. None of these stops the
cache or a caller: an entry that cannot be read whole is dropped and counted
(:attr:`OutputCache.dropped`), so the output is generated again, never served
damaged; only regular files count as entries, so a folder or a looping link is
neither evicted nor allowed to stop eviction. A write that fails (disk full) is
counted (:attr:`OutputCache.write_failures`) and logged once per run of failures:
the output is still served, from the caller's hands (and the memory layer).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
import threading
import time
from collections import OrderedDict
from pathlib import Path

from arena_core.backends.output import IMAGE_SUFFIXES, Output, OutputError

logger = logging.getLogger(__name__)

#: Default size budget of the cache directory (bytes): ~2,000 ten-second clips at 22 kHz.
DEFAULT_MAX_BYTES = 1024**3
#: After an eviction the cache is brought down to this fraction of its budget, so evictions are rare.
LOW_WATER = 0.9
#: Name of the file holding the secret that keys file names.
SECRET_FILE = ".secret"  # noqa: S105 - a file name, not a password
#: Bytes of that secret.
_SECRET_BYTES = 32
#: Temporary files older than this (seconds) are debris of a crashed writer and are removed.
_STALE_TEMP_SECONDS = 3600.0
#: Suffix of files being written.
_TEMP_SUFFIX = ".tmp"
#: File suffixes an entry of each modality may have.
_SUFFIXES = {"audio": (".wav",), "text": (".txt",), "image": tuple(IMAGE_SUFFIXES.values())}
_ENTRY_SUFFIXES = frozenset(s for suffixes in _SUFFIXES.values() for s in suffixes)


class OutputCache:
    """Outputs on disk under ``directory``, at most ``max_bytes`` in total (see the module docstring)."""

    def __init__(self, directory: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 memory_bytes: int = 0):  # fmt: skip
        if max_bytes <= 0 or memory_bytes < 0:
            raise ValueError(f"max_bytes must be positive and memory_bytes >= 0, got "
                             f"{max_bytes}, {memory_bytes}")  # fmt: skip
        self.memory_bytes = int(memory_bytes)
        self._memory: OrderedDict[str, tuple[Output, int]] = OrderedDict()
        self._memory_size = 0
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes = int(max_bytes)
        self._secret = _load_or_create_secret(self.directory / SECRET_FILE)
        self._lock = threading.Lock()
        #: Entries found damaged and dropped, and writes that failed, since start-up.
        self.dropped = self.write_failures = 0
        self._writes_failing = False
        self._size = sum(size for _, _, size in self._entries())

    def key(self, model_id: str, text: str, version: str, language: str | None = None) -> str:
        """The entry name for one generation: an HMAC, hex-encoded."""
        message = json.dumps([model_id, text, language, version], ensure_ascii=False).encode(
            "utf-8"
        )
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def get(self, key: str, modality: str) -> Output | None:
        """The cached output for ``key``, or None; a hit counts as an access for eviction."""
        if self.memory_bytes:
            with self._lock:
                held = self._memory.get(key)
                if held is not None and held[0].modality == modality:
                    self._memory.move_to_end(key)
                    return held[0]
        output = self._read(key, modality)
        if output is not None:
            self._remember(key, output)
        return output

    def has(self, key: str, modality: str) -> bool:
        """Whether ``key`` is cached, without reading it; a hit counts as an access for
        eviction, as for :meth:`get` (a battle's hold asks this of every model it could
        have drawn: reading each clip cost a fifth of a visit's server time)."""
        if self.memory_bytes:
            with self._lock:
                held = self._memory.get(key)
                if held is not None and held[0].modality == modality:
                    self._memory.move_to_end(key)
                    return True
        for suffix in _SUFFIXES[modality]:
            path = self.directory / f"{key}{suffix}"
            try:
                os.utime(path)
            except OSError:  # missing (or not ours to touch): not a hit
                continue
            return path.is_file()
        return False

    def _remember(self, key: str, output: Output) -> None:
        """Keep ``output`` in memory, dropping the least recently used beyond the budget."""
        size = _footprint(output)
        if not self.memory_bytes or size > self.memory_bytes:
            return
        with self._lock:
            old = self._memory.pop(key, None)
            self._memory_size += size - (old[1] if old else 0)
            self._memory[key] = (output, size)
            while self._memory_size > self.memory_bytes:
                _, (_, dropped) = self._memory.popitem(last=False)
                self._memory_size -= dropped

    def _read(self, key: str, modality: str) -> Output | None:
        for suffix in _SUFFIXES[modality]:
            path = self.directory / f"{key}{suffix}"
            try:
                data = path.read_bytes()
                output = Output.from_bytes(modality, data)
            except FileNotFoundError:
                continue
            except (OSError, OutputError, UnicodeDecodeError) as exc:  # a folder, a loop, damage
                self._drop(path, exc)
                continue
            with contextlib.suppress(OSError):
                os.utime(path)
            return output
        return None

    def _drop(self, path: Path, reason: Exception) -> None:
        """Count and remove an entry that cannot be read whole, so it is generated again."""
        logger.warning("dropping unreadable cache entry %s: %s", path.name, reason)
        with self._lock:
            self.dropped += 1
        with contextlib.suppress(OSError):  # a folder stays; it is never read as an entry
            path.unlink()

    def put(self, key: str, output: Output) -> Path | None:
        """Store ``output`` under ``key`` (atomically); returns its path, or None if it was not
        stored: larger than the budget allows, or the write failed (disk full, see the module
        docstring). Never raises for the disk: the caller has the output either way."""
        data = output.to_bytes()
        if len(data) > self.max_bytes * LOW_WATER:
            logger.info("not caching a %d-byte output (budget %d)", len(data), self.max_bytes)
            return None
        path = self.directory / f"{key}{output.suffix}"
        self._remember(key, output)
        try:
            try:
                _write_atomically(path, data)
            except FileNotFoundError:  # the folder was removed under the running app
                self._make_folder_again()
                _write_atomically(path, data)
        except OSError as exc:
            self._write_failed(path, exc)
            return None
        with self._lock:
            if self._writes_failing:
                self._writes_failing = False
                logger.info("cache writes to %s work again", self.directory)
            self._size += len(data)
            if self._size > self.max_bytes:
                self._evict()
        return path

    def _make_folder_again(self) -> None:
        """Recreate a cache folder deleted at run time (an operator clearing ``data/cache``):
        without it every later write failed until a restart. The folder gets this process's
        secret back, so a restart still finds what is written from now on; the byte count
        restarts from what is there (the old entries went with the folder)."""
        logger.warning("cache folder %s was removed; making it again", self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        _store_secret(self.directory / SECRET_FILE, self._secret)
        with self._lock:
            self._size = sum(size for _, _, size in self._entries())

    def _write_failed(self, path: Path, exc: OSError) -> None:
        """Count a failed write; log the first of a run of failures (a full disk fails them all)."""
        with self._lock:
            self.write_failures += 1
            first, self._writes_failing = not self._writes_failing, True
        if first:
            logger.warning("could not write cache entry %s (%s); serving outputs uncached until "
                           "writes work again", path.name, exc)  # fmt: skip

    @property
    def total_bytes(self) -> int:
        """Bytes of all entries as last counted (exact after each eviction)."""
        with self._lock:
            return self._size

    def _entries(self) -> list[tuple[float, Path, int]]:
        """(last access, path, size) of every entry; removes stale temporary files on the way.

        Only regular files are entries (the cache writes nothing else): a folder or a link
        named like one is left alone, and its target never looked at (a link may loop).
        """
        entries, now = [], time.time()
        try:
            paths = list(self.directory.iterdir())
        except OSError as exc:  # the folder itself went away: nothing to count or evict
            logger.warning("could not list cache folder %s: %s", self.directory, exc)
            return []
        for path in paths:
            try:
                info = path.lstat()
            except OSError:
                continue  # evicted or renamed by another writer meanwhile
            if not stat.S_ISREG(info.st_mode):
                continue
            if path.suffix == _TEMP_SUFFIX and now - info.st_mtime > _STALE_TEMP_SECONDS:
                with contextlib.suppress(OSError):
                    path.unlink()
            elif path.suffix in _ENTRY_SUFFIXES and not path.name.startswith("."):
                entries.append((info.st_mtime, path, info.st_size))
        return entries

    def _evict(self) -> None:
        """Delete least recently used entries down to the low-water mark; the caller holds the lock.

        An entry the memory layer holds counts as more recent than any other, in the memory's
        own order: its hits never touch the file, whose time would make the most played
        clips look the oldest (and be deleted first)."""
        held = {key: rank for rank, key in enumerate(self._memory)}
        entries = sorted(
            self._entries(), key=lambda e: (e[1].stem in held, held.get(e[1].stem, e[0]))
        )
        total = sum(size for _, _, size in entries)
        target = self.max_bytes * LOW_WATER
        for _, path, size in entries:
            if total <= target:
                break
            try:
                path.unlink()
            except FileNotFoundError:
                pass  # removed by another process meanwhile: its bytes are gone all the same
            except OSError as exc:
                logger.warning("could not evict cache entry %s: %s", path.name, exc)
                continue
            total -= size
        self._size = total


def _footprint(output: Output) -> int:
    """Bytes an output holds in memory."""
    if output.modality == "audio":
        return output.samples.nbytes
    if output.modality == "text":
        return len(output.text.encode("utf-8"))
    return len(output.image_bytes)


def _write_atomically(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a temporary file, synced before the rename, so readers and
    a restart after a crash find the whole file or none; the temporary file goes if it fails."""
    temp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}{_TEMP_SUFFIX}")
    try:
        with open(temp, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _read_secret(path: Path) -> bytes | None:
    """The secret in ``path`` if it is whole; None if absent or damaged (folder, loop, length)."""
    try:
        secret = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("cache secret %s is unreadable: %s", path, exc)
        return None
    return secret if len(secret) == _SECRET_BYTES else None


def _store_secret(path: Path, secret: bytes, *, replace: bool = False) -> bool:
    """Write ``secret`` to ``path``: unless a file is there already (first writer wins), or
    over a damaged one (``replace``); whether it was stored. A failure is logged, never
    raised: the secret is also in memory."""
    temp = path.with_name(f"{path.name}.{secrets.token_hex(4)}{_TEMP_SUFFIX}")
    try:
        temp.write_bytes(secret)
        if replace:
            os.replace(temp, path)
        else:
            os.link(temp, path)
    except FileExistsError:  # another process made it first
        return False
    except OSError as exc:
        logger.warning("could not store cache secret %s (%s); entries written now will be "
                       "misses after a restart", path, exc)  # fmt: skip
        return False
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    return True


def _load_or_create_secret(path: Path) -> bytes:
    """Read the cache's secret, creating it atomically (first writer wins) if absent.

    A damaged secret is replaced: the entries it named become misses, which eviction
    removes in time; a fresh secret that cannot be written (disk full, a folder in its
    place) is kept in memory for this process. Either way the cache opens.
    """
    secret = _read_secret(path)
    if secret is not None:
        return secret
    fresh = secrets.token_bytes(_SECRET_BYTES)
    damaged = path.is_symlink() or path.exists()
    if damaged:
        logger.warning("cache secret %s is damaged; starting a fresh one", path)
    _store_secret(path, fresh, replace=damaged)
    return _read_secret(path) or fresh
