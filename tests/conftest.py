"""Shared fixtures: the real app, launched on 127.0.0.1 with the default registry.

The speech engines are the real ones (installed from PyPI, plus Debian's flite and
Festival when present); hosted models have no token here and are unavailable, as on
any machine without one. Votes go to a temporary folder.
"""

import atexit
import contextlib
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's time limits fail a test when a shared or busy machine (CI, two pytest workers
# on two cores) runs one example slowly: the properties are what is tested, not the speed
# (speed lives in bench/). No example database: a run never depends on files an earlier run left.
settings.register_profile(
    "arena", deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
settings.load_profile("arena")

# Keep the test run offline and quiet: no usage reports from Gradio or the Hub client.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# Gradio's served files go to a folder of this test process's own, removed at the end: the
# shared default (/tmp/gradio) outlives every run, and apps launched on a folder of tens of
# thousands of files start slower.
if "GRADIO_TEMP_DIR" not in os.environ:
    os.environ["GRADIO_TEMP_DIR"] = tempfile.mkdtemp(prefix="arena-tests-gradio-")
    atexit.register(shutil.rmtree, os.environ["GRADIO_TEMP_DIR"], ignore_errors=True)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # app.py lives at the repository root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Ports :func:`launch_on_free_port` tries before it gives up.
LAUNCH_ATTEMPTS = 5


def launch_on_free_port(demo, **options) -> str:
    """Launch the Gradio ``demo`` on a free port of 127.0.0.1 (without blocking); its URL.

    A port found free can be taken before the server binds it (a client connection of any
    process draws its own port from the same range), and Gradio then raises OSError: the
    launch is tried again on a fresh port, so the race cannot fail a test.
    """
    for attempt in range(1, LAUNCH_ATTEMPTS + 1):
        port = free_port()
        try:
            demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port,
                        quiet=True, **options)  # fmt: skip
        except OSError:
            if attempt == LAUNCH_ATTEMPTS:
                raise
        else:
            return f"http://127.0.0.1:{port}/"
    raise AssertionError("unreachable")


@contextlib.contextmanager
def serving(service, settings):
    """The page of ``service`` served on a free local port, as ``python app.py`` serves it:
    yields its URL and its clip store; closes the page and then the service."""
    from app import build_demo, clip_store, launch_options

    clips = clip_store(settings)
    demo = build_demo(service, settings, clips)
    try:
        demo.queue(default_concurrency_limit=8)
        yield launch_on_free_port(demo, **launch_options(settings, clips)), clips
    finally:
        demo.close()
        service.close()


@pytest.fixture(scope="module")
def running_app(tmp_path_factory):
    """The Space as ``python app.py`` starts it, on a free local port."""
    from fakes import build_steady_service

    from arena_core.space.config import Settings

    data = tmp_path_factory.mktemp("arena-data")
    # The listening gate is off here so API tests can vote at once; tests of the gate turn
    # it on (service.listen_share) for themselves.
    settings = Settings(registry=ROOT / "registry.yaml", data_dir=data, voter_salt="test-salt",
                        listen_share=0.0)  # fmt: skip
    # Votes are stamped by a steady clock: the tests' one voter is tested for anomalous
    # voting, and with the wall clock it was flagged now and then (see build_steady_service).
    service = build_steady_service(settings, env={"PATH": os.environ.get("PATH", "")})
    service.load()
    with serving(service, settings) as (url, clips):
        yield SimpleNamespace(url=url, service=service, settings=settings, clips=clips)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright, for the browser tests (see ``browser.py``)."""
    from browser import launch_chromium, sync_api

    with sync_api.sync_playwright() as p:
        chromium = launch_chromium(p)
        yield chromium
        chromium.close()
