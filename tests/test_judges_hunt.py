"""Defects found by a hunt in the judges' runtime (session 33): each test failed before its fix.

* An LLM judge's ``timeout`` bounded each read of the HTTP client, not the call: a service
  that keeps sending a byte at a time held a 0.5 s judge for as long as it liked.
* ``python -m arena_core judge`` voted with a blank ``ARENA_JUDGE_TOKEN`` as given while the
  service it built read blank as unset: every verdict of the run was refused.
* The Space's background judges spun without a pause while the votes replayed, or while
  every battle was refused at once, when ``ARENA_JUDGE_PAUSE`` is 0.
* A judge that raised anything but :class:`JudgeError`, or returned something other than a
  :class:`Verdict`, ended a ``judge`` run with a traceback at that battle.
* A run's reasons for battles not judged were cut at the first colon, and an LLM judge's
  messages begin with its id: every reason read as the judge's own id.
* A judge's rows of a speech battle had no clip lengths (``clip_a_s``, ``clip_b_s``),
  which the schema leaves null only when the clips are not audio.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType, SimpleNamespace

import pytest
from hosted_server import allow_loopback
from test_judges_service import TOKEN, PrefersFirst, make_service, registry, rows, spec

from arena_core.backends import Output
from arena_core.judges.base import Case, Judge, JudgeError, JudgeSpec
from arena_core.judges.llm import LLMJudge
from arena_core.judges.runner import BackgroundJudges, judge_battles
from arena_core.space.service import ArenaError

# -- the LLM judge's timeout bounds the whole call -------------------------------------------

#: Bytes the trickling service sends one at a time before its answer, and the gap between.
TRICKLE_BYTES, TRICKLE_GAP = 12, 0.3


class _Trickle(BaseHTTPRequestHandler):
    """A chat API that announces its answer, then sends leading blanks a byte at a time."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        message = {"role": "assistant", "content": "Verdict: A"}
        body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": message}]}).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(TRICKLE_BYTES + len(body)))
        self.end_headers()
        try:
            for _ in range(TRICKLE_BYTES):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(TRICKLE_GAP)
            self.wfile.write(body)
        except OSError:  # the client gave up
            pass


def test_an_llm_judge_call_ends_at_its_timeout_when_the_reply_trickles(monkeypatch):
    allow_loopback(monkeypatch)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        options = {"type": "openai-compatible", "base_url": f"http://127.0.0.1:{server.server_port}/v1",
                   "model": "m", "key_env": "KEY", "timeout": 0.5}  # fmt: skip
        judge = LLMJudge(JudgeSpec(id="judge/llm", name="x", kind="llm", arenas=("chat",),
                                   options=MappingProxyType(options)), env={"KEY": "k"})  # fmt: skip
        case = Case("Capital of France?", Output.from_text("Paris."), Output.from_text("Lyon."))
        began = time.monotonic()
        with pytest.raises(JudgeError, match=r"^judge/llm: no answer within 0\.5 s$"):
            judge.judge(case)
        assert time.monotonic() - began < 2.0  # the service would have taken 3.6 s
    finally:
        server.shutdown()
        server.server_close()


# -- the CLI votes with the token its service takes ------------------------------------------


def test_the_judge_command_with_a_blank_token_votes_with_a_token_of_its_own(tmp_path, monkeypatch,
                                                                             capsys):  # fmt: skip
    import arena_core.judges.factory as factory
    import arena_core.registry as registry_module
    import arena_core.space.startup as startup
    from arena_core.cli import main

    built = []

    def build_service(settings, env):  # the real one's token rule, on the fake registry
        built.append(settings)
        return make_service(tmp_path, judge_token=settings.judge_token or None)

    monkeypatch.setattr(startup, "build_service", build_service)
    # The command checks the judge and its arena in the registry before the service is built.
    monkeypatch.setattr(registry_module, "load_registry", lambda path: registry())
    monkeypatch.setattr(factory, "make_judge", lambda judge_spec, env: PrefersFirst(judge_spec))
    monkeypatch.setenv("ARENA_JUDGE_TOKEN", "   ")
    status = main(["judge", "--arena", "speech", "--judge", "judge/first", "--battles", "2",
                   "--data", str(tmp_path), "--quiet"])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0, out
    assert "2 battles judged (4 votes)" in out
    assert built[0].judge_token.strip()  # a token of this run, not the blank one
    assert len(rows(tmp_path)) == 4


# -- the background judges never spin ---------------------------------------------------------


class _Loading:
    """``service.progress`` of a replay that never ends, counting how often it is asked."""

    def __init__(self):
        self.asked = 0

    @property
    def done(self):
        self.asked += 1
        return False


def _run_for(judges: BackgroundJudges, seconds: float) -> None:
    judges.start()
    time.sleep(seconds)
    judges.stop()
    assert not judges._thread.is_alive()


def test_background_judges_wait_while_the_votes_replay_even_without_a_pause():
    progress = _Loading()
    service = SimpleNamespace(progress=progress)
    _run_for(BackgroundJudges(service, [PrefersFirst(spec())], TOKEN, pause=0.0), 0.5)
    assert progress.asked <= 5  # it spun: hundreds of thousands of times


def test_background_judges_wait_when_every_battle_is_refused_even_without_a_pause():
    opened = []

    def new_battle(arena_id):
        opened.append(arena_id)
        raise ArenaError("Fewer than two models of arena 'speech' can run on this server.")

    service = SimpleNamespace(progress=SimpleNamespace(done=True), pools={"speech": None},
                              new_battle=new_battle)  # fmt: skip
    judges = BackgroundJudges(service, [PrefersFirst(spec())], TOKEN, pause=0.0)
    _run_for(judges, 0.5)
    assert 1 <= len(opened) <= 5  # it asked for battles thousands of times
    assert sum(judges.runs[("judge/first", "speech")].not_judged.values()) == len(opened)


# -- a judge that crashes or answers garbage --------------------------------------------------


class Crashes(Judge):
    """Crashes on the first and third battles (calls 1 and 4; the others take two calls)."""

    calls = 0

    def judge(self, case):
        self.calls += 1
        if self.calls in (1, 4):
            raise ZeroDivisionError("a bug in the judge")
        return PrefersFirst.judge(self, case)


class Garbage(Judge):
    def judge(self, case):
        return "a"  # not a Verdict


def test_a_judge_that_crashes_costs_its_battle_not_the_run(tmp_path, caplog):
    service = make_service(tmp_path, judge_token=TOKEN)
    run = judge_battles(service, Crashes(spec()), "speech", 4, TOKEN)
    assert run.judged == 2 and dict(run.not_judged) == {"the judge failed: ZeroDivisionError": 2}
    assert len(rows(tmp_path)) == 4
    assert "a bug in the judge" in caplog.text  # its traceback is logged
    garbage = judge_battles(service, Garbage(spec()), "speech", 2, TOKEN)
    assert garbage.judged == 0
    assert dict(garbage.not_judged) == {"the judge answered str, not a verdict": 2}
    assert len(rows(tmp_path)) == 4


# -- the reasons a run reports ----------------------------------------------------------------


class Says(Judge):
    def __init__(self, judge_spec, message):
        super().__init__(judge_spec)
        self.message = message

    def judge(self, case):
        raise JudgeError(self.message)


@pytest.mark.parametrize(("message", "reason"), [
    ("judge/first: unavailable: HF_TOKEN not set", "unavailable: HF_TOKEN not set"),
    ("judge/first: no answer within 60 s", "no answer within 60 s"),
    ("judge/first: unreadable reply 'I cannot say.': its last line is no verdict",
     "unreadable reply"),
    ("judge 'judge/first': its recogniser understands en only, not 'de'",
     "its recogniser understands en only, not"),
])  # fmt: skip
def test_a_run_reports_why_each_battle_was_not_judged(tmp_path, message, reason):
    service = make_service(tmp_path, judge_token=TOKEN)
    run = judge_battles(service, Says(spec(), message), "speech", 2, TOKEN)
    assert dict(run.not_judged) == {reason: 2}


# -- the rows of a judge's verdicts -----------------------------------------------------------


def test_a_judges_rows_of_a_speech_battle_carry_its_clip_lengths_in_their_order(tmp_path):
    service = make_service(tmp_path, judge_token=TOKEN)
    handle, _ = service.book.open(arena="speech", model_a="m0", model_b="m1",
                                  prompt="Hello there.", prompt_id="p1", category="en",
                                  clips={"clip_a_s": 1.5, "clip_b_s": 2.25})  # fmt: skip
    service.book.delivered(handle)
    service.judge_vote(handle, ("a", "b"), "judge/first", TOKEN)
    first, second = rows(tmp_path)
    assert (first["model_a"], first["clip_a_s"], first["clip_b_s"]) == ("m0", 1.5, 2.25)
    assert (second["model_a"], second["clip_a_s"], second["clip_b_s"]) == ("m1", 2.25, 1.5)


def test_the_settings_never_print_their_secrets():
    """A ``Settings`` in a log line or a traceback showed the salt and both tokens."""
    from arena_core.space.config import Settings

    settings = Settings(voter_salt="salt-secret", hf_token="hf_secret", judge_token="judge-secret")
    assert not any(
        secret in repr(settings) for secret in ("salt-secret", "hf_secret", "judge-secret")
    )
