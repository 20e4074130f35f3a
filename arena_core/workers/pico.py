"""SVOX Pico in a process of its own (see ``arena_core.backends.nanotts`` for why).

``python -m arena_core.workers.pico`` reads one request per line on stdin (JSON: text,
voice, speed, pitch, volume) and answers each on stdout with a status byte (``0`` audio,
``1`` an error message), a 4-byte big-endian length and the payload (16 kHz 16-bit PCM,
or the message in UTF-8). It ends when stdin closes, so it never outlives the app that
started it, however the app ends. A plain subprocess rather than ``multiprocessing``:
a spawned worker imports the app's main module (``app.py``, hence Gradio: 240 MB a
worker), and a worker of a killed app waited for ever.

:class:`PicoProcess` is the app's side.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

_HEADER = struct.Struct(">BI")
#: Where ``arena_core`` lives, for the worker's import path (the app may run from anywhere).
_ROOT = str(Path(__file__).resolve().parent.parent.parent)


class PicoWorkerError(Exception):
    """The worker failed, timed out or died; the next request starts a new one."""


class PicoProcess:
    """One worker process, started on first use, serving one request at a time."""

    def __init__(self, nice: int = 0):
        self.nice = nice
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def speak(self, request: dict, timeout: float) -> bytes:
        """The PCM for ``request``; :class:`TimeoutError` after ``timeout`` seconds in all
        (waiting for the worker included), :class:`PicoWorkerError` if it fails or dies."""
        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=timeout):
            raise TimeoutError("Pico was busy for the whole timeout")
        try:
            proc = self._started()
            try:
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
                status, payload = _read_answer(proc.stdout, deadline)
            except (OSError, EOFError, TimeoutError) as exc:
                self._stop()  # a worker stuck or dead is replaced
                if isinstance(exc, TimeoutError):
                    raise
                raise PicoWorkerError("Pico's worker process died") from None
            if status:
                raise PicoWorkerError(payload.decode("utf-8", "replace"))
            return payload
        finally:
            self._lock.release()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _started(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)}  # fmt: skip
            self._proc = subprocess.Popen([sys.executable, "-m", "arena_core.workers.pico"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          env=env)  # fmt: skip
            with contextlib.suppress(OSError):  # not allowed here: slower to yield, never wrong
                os.setpriority(os.PRIO_PROCESS, self._proc.pid, self.nice)
        return self._proc

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            for pipe in (self._proc.stdin, self._proc.stdout):
                # Closing flushes what a failed write left buffered: to a dead worker that
                # is a BrokenPipeError, which must not replace "the worker died".
                with contextlib.suppress(OSError):
                    pipe.close()
            self._proc = None


def _read_answer(stream, deadline: float) -> tuple[int, bytes]:
    header = _read_exactly(stream, _HEADER.size, deadline)
    status, length = _HEADER.unpack(header)
    return status, _read_exactly(stream, length, deadline)


def _read_exactly(stream, n: int, deadline: float) -> bytes:
    """``n`` bytes from a pipe, waiting at most until ``deadline``."""
    chunks, left = [], n
    fd = stream.fileno()
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise TimeoutError("Pico took longer than the timeout")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the worker closed its output")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main() -> None:
    """The worker's loop (see the module docstring)."""
    from py_nanotts import NanoTTS

    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            r = json.loads(line)
            payload, status = NanoTTS().speak(r["text"], voice=r["voice"], speed=r.get("speed"),
                                              pitch=r.get("pitch"), volume=r.get("volume")), 0  # fmt: skip
        except Exception as exc:  # any failure is answered, never fatal
            payload, status = f"{type(exc).__name__}: {exc}".encode(), 1
        out.write(_HEADER.pack(status, len(payload)) + payload)
        out.flush()


if __name__ == "__main__":
    main()
