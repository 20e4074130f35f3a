"""Test doubles shared by several test modules: a tiny registry, a clock, a fake model, and
two probes of a vote log (a batch of two votes, the files a process holds open)."""

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from arena_core.backends import Availability, Backend, Output
from arena_core.backends.base import VOICE_OPTIONS

REGISTRY = {
    "arenas": [
        {
            "id": "speech",
            "title": "Speech",
            "modality": "text",
            "prompts": [
                {"id": "p1", "text": "Hello there.", "category": "en"},
                {"id": "p2", "text": "Guten Tag.", "category": "de"},
            ],
            "models": [
                {"id": f"m{k}", "name": f"Model {k}", "backend": {"type": "fake", **voices}}
                for k, voices in enumerate(
                    [
                        {"voices": {"en": "x", "de": "y"}},
                        {"voices": {"en": "x", "de": "y"}},
                        {"voices": {"en": "x"}},
                        {"voices": {"de": "y"}},
                    ]
                )
            ],
        }
    ]
}


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class SteadyVoteClock:
    """A vote log's clock that starts at a fixed past instant and steps 1 ms per call.

    The anomalous-voter test breaks ties in its p-values with each vote's timestamp, so
    with the wall clock an honest voter is flagged now and then (about one run in a few
    hundred here). Tests that assert exactly who is flagged stamp votes with this clock,
    which makes the outcome the same on every run.
    """

    def __init__(self, start=datetime(2026, 1, 1, tzinfo=UTC)):
        self.now = start

    def __call__(self):
        self.now += timedelta(milliseconds=1)
        return self.now


#: Where the vote clock of :func:`build_steady_service` starts: after every vote the tests'
#: stand-in Hub repos hold (October 2026; a log never stamps a vote before the latest one it
#: replayed, and ignores a floor far ahead of its clock), before the days the snapshot tests
#: publish (December 2026), and in the past, so no reader skips the votes as future ones.
APP_VOTES_START = datetime(2026, 11, 20, tzinfo=UTC)


def build_steady_service(settings, **kwargs):
    """``build_service(settings, **kwargs)`` with its vote log stamped by a
    :class:`SteadyVoteClock` from :data:`APP_VOTES_START`.

    A voter who casts five votes or more is tested for anomalous voting, and a lone voter's
    p-values are the tie-breaks drawn from the timestamps: with the wall clock the tests'
    one voter was flagged in about one run in 500 to 1,000 per test (at 5 to 40 votes), and
    its votes then left the board the test checks. With this clock every run stamps, and
    flags, the same.
    """
    from arena_core.space.startup import build_service

    return build_service(settings, vote_clock=SteadyVoteClock(APP_VOTES_START), **kwargs)


class FakeBackend(Backend):
    """Says the prompt back, or fails when told to."""

    type_name = "fake"
    modalities = frozenset({"text"})
    options_spec = MappingProxyType(dict(VOICE_OPTIONS))

    def __init__(self, model, fail=False):
        super().__init__(model, next(iter(self.modalities)))
        self.fail = fail
        #: Fail on prompts containing this text (a prompt the engine cannot speak).
        self.fail_on: str | None = None
        self.calls = 0

    def _check_availability(self):
        return Availability.yes()

    def _engine_version(self):
        return "1"

    def _generate(self, text, timeout, language):
        self.calls += 1
        if self.fail or (self.fail_on and self.fail_on in text):
            raise RuntimeError("engine crashed")
        return Output.from_text(f"{text} [{language}]")


def full_disk(monkeypatch) -> None:
    """Make every write of the output cache fail as on a full disk (ENOSPC), and nothing else.

    Only the cache module's ``os`` is replaced: the vote log and the rest keep the real one.
    """
    import errno
    import os
    import types

    from arena_core.backends import cache

    def replace(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(cache, "os", types.SimpleNamespace(**{**vars(os), "replace": replace}))


def batch_of_two(store, vote, fail) -> dict[str, object]:
    """Two votes ("b" and "tie", each cast by ``vote(store, choice)``) queued behind the vote
    log's lock, so that they are written as one batch, and ``fail()`` called once both
    wait (it makes the write fail, e.g. by a monkeypatch); what each caller got, its vote's
    id or the exception its request would end with."""
    answers: dict[str, object] = {}

    def cast(choice):
        try:
            answers[choice] = vote(store, choice)
        except Exception as exc:  # what the visitor's request would end with
            answers[choice] = exc

    threads = [threading.Thread(target=cast, args=(choice,)) for choice in ("b", "tie")]
    with store.lock:  # both votes queue behind it: one batch
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(store._queue) < 2:
            assert time.monotonic() < deadline, "the two votes never queued"
            time.sleep(0.001)
        fail()
    for thread in threads:
        thread.join()
    return answers


def open_files() -> list[str]:
    """What this process's descriptors of files and folders lead to (a deleted file's name
    ends in `` (deleted)``: its disk space is not freed while a descriptor is open). Sockets,
    pipes and devices are left out: threads of earlier tests in the same worker (a server's
    connection, a pool's wake-up pipe) open and close them at any time, and one once failed
    a run (32 descriptors against 31)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
        if target.startswith("/") and not target.startswith(("/dev/", "/proc/")):
            found.append(target)
    return found
