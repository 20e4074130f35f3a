"""Process-wide settings of the web stack the Space runs on (Gradio, uvicorn), made once at
start-up: what the libraries do by default that the arena must not let them do."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys

log = logging.getLogger(__name__)


def peer_is_the_socket() -> None:
    """Keep uvicorn from rewriting the connection's peer from X-Forwarded-For.

    Gradio starts uvicorn with its proxy headers on, trusting 127.0.0.1 (and the
    ``FORWARDED_ALLOW_IPS`` variable): a client on the same host, or behind a local tunnel
    passing the header through, then chose its own peer address, and with
    ``ARENA_TRUSTED_PROXIES=0`` (the peer is the voter) it was a new voter at every vote.
    Which ``X-Forwarded-For`` entry names the voter is the identity module's rule alone
    (``arena_core/integrity/identity.py``); the Spaces proxy connects from another address,
    which uvicorn never trusted, so a Space behaves as before.
    """
    if os.environ.get("FORWARDED_ALLOW_IPS"):
        log.warning("ignoring FORWARDED_ALLOW_IPS: ARENA_TRUSTED_PROXIES says which "
                    "X-Forwarded-For entry is the voter")  # fmt: skip
    os.environ["FORWARDED_ALLOW_IPS"] = ""


def forget_missing_matplotlib() -> None:
    """Let Gradio find out once, not on every event, that matplotlib is not installed.

    Gradio wraps each event in ``import matplotlib`` (to switch its backend) and ignores the
    ImportError; a failed import is not remembered, so each event searched ``sys.path`` again,
    a twentieth of the server's time under load. ``None`` in ``sys.modules`` is Python's own
    way of saying "this module is absent": the import then fails at once.
    """
    if importlib.util.find_spec("matplotlib") is None:
        sys.modules["matplotlib"] = None
