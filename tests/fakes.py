"""Test doubles shared by several test modules: a tiny registry, a clock, a fake model."""

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
