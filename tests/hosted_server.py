"""A stand-in on 127.0.0.1 for the HF inference API and OpenAI-compatible chat APIs.

The real services cannot be reached from this machine, so the hosted backend
tests and the LLM judge tests point the real clients (``InferenceClient``) at
this server, which answers on the same protocol and records every request.
The first path segment picks the route: ``/v1/chat/completions`` answers a chat
completion with :attr:`FakeInferenceServer.chat_reply`, ``/tts`` a WAV,
``/overloaded`` an HTTP 503, ``/slow`` only after :data:`SLOW_SECONDS` (so a
client's timeout fires first), and so on.
"""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from arena_core.backends.audio import encode_wav

#: Seconds the "slow" routes sleep; far above the timeouts the tests use.
SLOW_SECONDS = 3.0
TONE_RATE = 16000
#: How often the stand-in server checks for shutdown (keeps teardown quick).
POLL_SECONDS = 0.02
#: What the chat route answers unless a test sets another reply.
DEFAULT_CHAT_REPLY = "Paris is the capital of France."


def tone(rate: int = TONE_RATE, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * 220 * t) * 12000).astype(np.int16)


def compressed_tone(container: str) -> bytes:
    """The tone as FLAC or MP3 (needs soundfile; without it, just the FLAC magic and no audio)."""
    try:
        import soundfile
    except ImportError:
        return b"fLaC" + bytes(40)
    buffer = io.BytesIO()
    soundfile.write(buffer, tone(), TONE_RATE, format=container)
    return buffer.getvalue()


def png_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


class FakeInferenceServer(ThreadingHTTPServer):
    """Answers like the HF inference API / an OpenAI-compatible API; records every request.

    ``chat_reply`` is the chat route's answer: a string, or a function of the
    request's JSON body (to answer according to what was asked).
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.chat_reply: str | Callable[[dict], str] = DEFAULT_CHAT_REPLY

    def handle_error(self, request, client_address):
        """A client that gave up (its timeout fired) is expected here, not worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def serving() -> Iterator[FakeInferenceServer]:
    """A running stand-in server, shut down on exit."""
    srv = FakeInferenceServer()
    thread = threading.Thread(target=srv.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def allow_loopback(monkeypatch) -> None:
    """CI sets HF_HUB_OFFLINE=1, which makes huggingface_hub refuse every request, even to
    127.0.0.1. The stand-in servers are local, so let the client through; the setting is
    read once at import, hence the patch of the module constant rather than the variable.
    """
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append(
            {
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "json": json.loads(body or b"null"),
            }
        )
        route = self.path.rstrip("/").split("/")[1]
        if route == "slow":
            time.sleep(SLOW_SECONDS)
        handler = getattr(self, f"_{route}", None) or self._not_found
        handler()

    def _send(self, status: int, content_type: str, payload: bytes):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _tts(self):
        self._send(200, "audio/wav", encode_wav(TONE_RATE, tone()))

    def _flac(self):
        self._send(200, "audio/flac", compressed_tone("FLAC"))

    def _mp3(self):
        self._send(200, "audio/mpeg", compressed_tone("MP3"))

    def _html(self):
        self._send(200, "text/html", b"<html>maintenance</html>")

    def _image(self):
        self._send(200, "image/png", png_bytes())

    def _v1(self):
        reply = self.server.chat_reply
        content = reply(self.server.requests[-1]["json"]) if callable(reply) else reply
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "served-model",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        }
        self._send(200, "application/json", json.dumps(answer).encode())

    def _overloaded(self):
        self._send(503, "application/json", b'{"error": "Model is overloaded"}')

    def _slow(self):
        self._tts()

    def _not_found(self):
        self._send(404, "application/json", b'{"error": "not found"}')
