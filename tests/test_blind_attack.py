"""The blind battle played by an attacker through gradio_client, against the real app on 127.0.0.1.

The attacker (``arena_core.space.fingerprint``) collects revealed battles, learns
what the delivery decides (URL, bytes hash, WAV header, sample rate, length, and
the event's duration as Gradio reports it), then names the models of fresh battles
before voting. Against the app as it runs, it must do no better than chance plus a
stated margin; against the same app with blinding switched off, the same attacker
must succeed, so this test can fail.

Blind means no better than listening does: the peak and RMS level, after loudness
normalisation, still carry each voice's crest factor and spectral tilt, which a
listener hears as the voice itself. So the attacker's best, from everything the
client sees (delivery, peak and RMS), is held to a listener's baseline: the same
attacker using only each clip's timbre (its long-term spectrum, level removed).

To stay fast it runs a reduced English arena (the real engines that are installed,
four set prompts) whose set prompts the warm-up pre-generates first.
"""

import json
import math
import os
import time

import gradio_client.client
import httpx
import pytest
import yaml
from conftest import ROOT, launch_on_free_port
from gradio_client import Client

from arena_core.space.fingerprint import FingerprintTable, Sighting, clip_features, score

#: Models of the reduced arena, in preference order: one of each engine family, plus
#: the loudest (flite slt), the 8 kHz (flite kal), the 16 kHz (Pico) and the slow (Piper).
MODELS = ("espeak-ng/en-us", "espeak-ng/en+klatt", "pico/en-US", "piper/en_US-joe-medium",
          "flite/kal", "flite/slt", "festival/cmu_us_slt_arctic_hts")  # fmt: skip
#: Set prompts of the reduced arena.
PROMPTS = 4
#: Revealed battles the attacker learns from, and fresh battles it names (blinded app).
TRAIN, FRESH = 40, 120
#: The same for the undefended app: its URLs give it away within a few battles.
TRAIN_UNDEFENDED, FRESH_UNDEFENDED = 30, 15
#: Excess over chance (absolute share of battles) the undefended attacker must beat, and
#: the attacker with everything the client sees may have over a listener.
BOTH_MARGIN, SIDE_MARGIN = 0.08, 0.12
#: Chance that an attacker who merely guesses fails the blinded test. Its hits are then
#: binomial, and the test allows any count a guesser reaches with at least this chance:
#: with 120 fresh battles and 7 models that is up to 14 of 120 named both (chance 2.4%, so
#: 9.3 points over it) and 62 of 240 sides (chance 14.3%, 11.5 points over). With 40 fresh
#: battles and fixed margins of 8 and 12 points, a guesser failed about one run in 250.
GUESSER_FAILS = 1e-6


def binomial_tail(n: int, p: float, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed exactly from the probability mass."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def most_a_guesser_hits(n: int, p: float, level: float = GUESSER_FAILS) -> int:
    """The largest count ``k`` that ``n`` guesses, each right with chance ``p``, reach or
    pass with probability at least ``level``: a higher count is evidence of a leak."""
    return next(k for k in range(n + 2) if binomial_tail(n, p, k + 1) < level)


#: What the delivery decides, as the attacker's evidence.
DELIVERY = ("url", "digest", "header", "length", "rate", "seconds")


class _DurationSpy:
    """Stands in for the ``json`` module of gradio_client, keeping the last reported duration."""

    def __init__(self):
        self.last = None

    def loads(self, text, *args, **kwargs):
        message = json.loads(text, *args, **kwargs)
        if isinstance(message, dict) and message.get("msg") == "process_completed":
            self.last = (message.get("output") or {}).get("duration")
        return message

    def __getattr__(self, name):
        return getattr(json, name)


def _reduced_registry(path, available):
    data = yaml.safe_load((ROOT / "registry.yaml").read_text())
    arena = next(a for a in data["arenas"] if a["id"] == "tts-en")
    prompts = yaml.safe_load((ROOT / arena["prompts"]).read_text())[:PROMPTS]
    arena.update(prompts=prompts, models=[m for m in arena["models"] if m["id"] in available])
    path.write_text(yaml.safe_dump({"arenas": [arena]}, allow_unicode=True))
    return path


def _launch(service, settings):
    from app import build_demo, clip_store, launch_options

    clips = clip_store(settings)
    demo = build_demo(service, settings, clips)
    demo.queue(default_concurrency_limit=8)
    return demo, launch_on_free_port(demo, **launch_options(settings, clips))


@pytest.fixture(scope="module")
def arenas(tmp_path_factory):
    """The reduced arena served twice from one warm data folder: blinded, and as engines make it."""
    from arena_core.space.config import Settings
    from arena_core.space.startup import build_service

    env = {"PATH": os.environ.get("PATH", "")}
    folder = tmp_path_factory.mktemp("blind")
    probe = build_service(
        Settings(registry=ROOT / "registry.yaml", data_dir=folder / "probe"), env=env
    )
    status = probe.pools["tts-en"].status()
    probe.close()
    available = [m for m in MODELS if status[m].available]
    assert len(available) >= 4, f"too few speech engines installed: {available}"
    registry = _reduced_registry(folder / "registry.yaml", available)
    # The attacker votes at once: the listening gate, which it would meet, is off here.
    settings = Settings(registry=registry, data_dir=folder / "data", voter_salt="attack",
                        listen_share=0.0)  # fmt: skip
    served = []
    for blinded in (True, False):
        service = build_service(settings, env=env)
        service.load()
        if blinded:
            service.warmup.calibrate = False  # set prompts only: the hold does not apply
            service.warmup.run()
        else:
            service.blinder = service.pacer = None
        served.append((service, *_launch(service, settings)))
    yield {"blinded": served[0][2], "undefended": served[1][2], "models": available}
    for service, demo, _ in served:
        demo.close()
        service.close()


def _play(url, battles, monkeypatch):
    """``battles`` battles on set prompts: what the client saw, and the reveal after its vote."""
    spy = _DurationSpy()
    monkeypatch.setattr(gradio_client.client, "json", spy)
    client = Client(url, analytics_enabled=False, verbose=False, download_files=False)
    played = []
    with httpx.Client() as http:
        for _ in range(battles):
            began = time.perf_counter()
            prompt, audio_a, audio_b, *_ = client.predict("tts-en", "", api_name="/new_battle")
            seconds = spy.last if spy.last is not None else time.perf_counter() - began
            clips = [
                clip_features(f["url"], http.get(f["url"]).content) for f in (audio_a, audio_b)
            ]
            _, reveal = client.predict("tie", api_name="/vote")
            seen = Sighting(prompt, *clips, seconds)
            played.append((seen, reveal["model_a"]["id"], reveal["model_b"]["id"]))
    client.close()
    return played


def _attack(played, train, use=DELIVERY):
    table = FingerprintTable(use)
    for seen, model_a, model_b in played[:train]:
        table.learn(seen, model_a, model_b)
    return score(table, played[train:])


def _report(name, result):
    print(f"{name}: both named {result.both}/{result.battles} (chance {result.both_chance:.1%}), "
          f"sides {result.sides}/{2 * result.battles} (chance {result.side_chance:.1%})")  # fmt: skip


def test_the_attacker_names_undefended_battles(arenas, monkeypatch):
    played = _play(arenas["undefended"], TRAIN_UNDEFENDED + FRESH_UNDEFENDED, monkeypatch)
    result = _attack(played, TRAIN_UNDEFENDED)
    _report("\nundefended, delivery", result)
    assert result.both_rate >= 0.5, result  # the URL and bytes of a cached clip never change
    assert result.both_rate > result.both_chance + BOTH_MARGIN


def test_the_attacker_does_no_better_than_chance_on_blinded_battles(arenas, monkeypatch):
    played = _play(arenas["blinded"], TRAIN + FRESH, monkeypatch)
    clips = [c for seen, _, _ in played for c in (seen.a, seen.b)]
    assert len({c.url for c in clips}) == len(clips) and len({c.digest for c in clips}) == len(
        clips
    )
    assert {c.rate for c in clips} == {24_000}
    assert all(seen.a.samples == seen.b.samples for seen, _, _ in played)
    for use in (("peak_db",), ("rms_db",)):
        _report(f"blinded, {'+'.join(use)}", _attack(played, TRAIN, use))
    result = _attack(played, TRAIN)
    _report("blinded, delivery", result)
    assert result.both <= most_a_guesser_hits(result.battles, result.both_chance), result
    assert result.sides <= most_a_guesser_hits(2 * result.battles, result.side_chance), result
    everything = _attack(played, TRAIN, FingerprintTable.ALL)
    listener = _attack(played, TRAIN, FingerprintTable.LISTENER)
    _report("blinded, everything the client sees", everything)
    _report("blinded, a listener's baseline (timbre)", listener)
    assert everything.side_rate <= listener.side_rate + SIDE_MARGIN, (everything, listener)
