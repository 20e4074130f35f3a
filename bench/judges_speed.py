"""The speech judges and the style features on this machine: how fast, and what they measure.

    nice -n 10 python bench/judges_speed.py                    # both tables
    nice -n 10 python bench/judges_speed.py --prompts 3 --deliveries 1   # quicker

The full run transcribes about 60 clips per model (14 models): some ten minutes on two
busy cores. Piper's voice is stochastic, so its row changes from run to run.

Every local model of the English arena (hosted ones skipped) speaks ``--prompts``
prompts spread over the prompt set. For each model, medians over its clips:

* **WER own**: the intelligibility judge's word error rate of the clip against its
  own prompt; **WER other**: the same transcript against the next prompt of the
  list (a clip of a different sentence). The judge's ``fail_wer`` sits between.
* **WER spread**: the largest minus the smallest WER of one clip over
  ``--deliveries`` blind deliveries (arena_core/space/blinding.py: same speech,
  new dither, margins and level): the recogniser's noise, which the judge's
  ``margin`` should cover.
* **right**, **wrong**, **bad**: shares of the cases (own clip, clip of the next
  prompt), in both orders, judged for the right clip, for the wrong one, and both bad
  (both above ``fail_wer``: the recogniser did not follow the voice); the rest are ties;
* **range st**: the prosody judge's pitch range (semitones);
* **ASR s/clip**, **pitch s/clip**: seconds per clip of the recogniser (with
  resampling) and of the pitch tracker.

The second table times :func:`arena_core.analysis.speech_style.speech_style` on a
4 s, 24 kHz clip (compiled loudness loop and the scipy path), and the judges on it.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import arena_core.analysis.speech_style as style
from arena_core.backends import BackendError, Output, make_backend
from arena_core.judges.base import Case, JudgeSpec, both_orders
from arena_core.judges.speech import (
    IntelligibilityJudge,
    ProsodyJudge,
    pitch_range,
    word_error_rate,
)
from arena_core.judges.transcript import readings
from arena_core.registry import load_registry
from arena_core.space.blinding import BlindingParams, blind

#: Seconds one generation may take.
TIMEOUT = 120.0


def spread(prompts: list, count: int) -> list:
    step = max(1.0, len(prompts) / count)
    return [prompts[int(k * step)] for k in range(min(count, len(prompts)))]


def best_ms(function, repeats: int) -> float:
    """Fastest of ``repeats`` calls (ms): the machine's cost without the neighbours' noise."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return min(times) * 1e3


def timed(function, *args):
    began = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - began


class Remembering:
    """A recogniser that transcribes each clip once (the judge in both orders hears the same
    two clips again): the verdicts are the judge's, the bench just waits less."""

    def __init__(self, recogniser):
        self.recogniser = recogniser
        self.sample_rate = recogniser.sample_rate
        self.languages = recogniser.languages
        self.heard: dict[bytes, str] = {}

    def transcribe(self, samples: np.ndarray) -> str:
        key = hashlib.sha256(samples.tobytes()).digest()
        if key not in self.heard:
            self.heard[key] = self.recogniser.transcribe(samples)
        return self.heard[key]


def measure_model(backend, prompts, judge: IntelligibilityJudge, deliveries: int) -> dict:
    clips = [backend.generate(p.text, TIMEOUT) for p in prompts]
    texts = [p.text for p in prompts]
    own, other, spreads, asr, ranges, pitch_s, calls = [], [], [], [], [], [], []
    remembering = IntelligibilityJudge(judge.spec, recogniser=Remembering(judge.recogniser))
    for k, (clip, text) in enumerate(zip(clips, texts, strict=True)):
        wrong_text = texts[(k + 1) % len(texts)]
        heard, seconds = timed(judge.transcribe, clip)
        asr.append(seconds)
        own.append(judge_wer(text, heard))
        other.append(judge_wer(wrong_text, heard))
        redelivered = [
            judge_wer(text, judge.transcribe(o)) for o in deliveries_of(clip, deliveries)
        ]
        values = [*redelivered, own[-1]]
        spreads.append(max(values) - min(values))
        (width, _), seconds = timed(pitch_range, clip)
        ranges.append(width)
        pitch_s.append(seconds)
        wrong_clip = clips[(k + 1) % len(clips)]
        drawn, swapped = both_orders(remembering, Case(text, clip, wrong_clip, "en"))
        # In the order drawn, "a" is the right clip; swapped, "b" is.
        calls += [drawn.choice, {"a": "b", "b": "a"}.get(swapped.choice, swapped.choice)]
    med = statistics.median
    return {"wer_own": med(own), "wer_other": med(other), "wer_spread": med(spreads),
            "wer_spread_max": max(spreads), "right": calls.count("a") / len(calls),
            "wrong": calls.count("b") / len(calls), "both_bad": calls.count("both_bad") / len(calls),
            "range": med(ranges), "asr_s": med(asr), "pitch_s": med(pitch_s),
            "audio_s": med(c.duration for c in clips)}  # fmt: skip


def judge_wer(prompt: str, heard: str) -> float:
    return word_error_rate(readings(prompt), heard)


def deliveries_of(clip: Output, count: int) -> list[Output]:
    params = BlindingParams()
    return [blind([clip], params, np.random.default_rng(seed))[0] for seed in range(count)]


def style_table(judge: IntelligibilityJudge, prosody: ProsodyJudge, clip: Output) -> None:
    rate = 24_000
    rng = np.random.default_rng(0)
    t = np.arange(4 * rate) / rate
    tone = 0.3 * np.sin(2 * np.pi * 180 * t) * (np.sin(2 * np.pi * 3 * t) > -0.3)
    samples = (tone * 32767 + rng.normal(0, 2, len(t))).astype(np.int16)
    four = Output.from_audio(rate, samples)
    prompt = "The quick brown fox jumps over the lazy dog."
    style.speech_style(four, prompt)  # compile (or load the compiled loop) first
    compiled = best_ms(lambda: style.speech_style(four, prompt), 300)
    scipy_ms = best_ms(lambda: style._energy_scipy(samples, style.k_weighting(rate),
                                                   style.loudness_length(len(samples), rate)), 100)  # fmt: skip
    activity = best_ms(lambda: style.active_seconds(samples, rate), 300)
    units = best_ms(lambda: style.prompt_units(prompt), 300)
    spec = JudgeSpec("bench", "bench", "intelligibility", ("tts-en",))
    case = Case(prompt, clip, clip, "en")
    print(f"\n{'what (4 s clip at 24 kHz unless said)':<56} {'ms':>9}")
    print(f"{'speech_style, numba loudness loop (best of 300)':<56} {compiled:>9.3f}")
    print(f"{'  of which activity (duration, pauses)':<56} {activity:>9.3f}")
    print(f"{'  of which prompt_units':<56} {units:>9.3f}")
    print(f"{'K-weighted energy through scipy instead (best of 100)':<56} {scipy_ms:>9.3f}")
    print(f"{'prosody judge, one case of two 4 s clips (best of 5)':<56} "
          f"{best_ms(lambda: prosody.judge(Case(prompt, four, four)), 5):>9.1f}")  # fmt: skip
    print(f"{f'intelligibility judge, one case of two {clip.duration:.1f} s clips (one run)':<56} "
          f"{best_ms(lambda: IntelligibilityJudge(spec, recogniser=judge.recogniser).judge(case), 1):>9.1f}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--registry", default="registry.yaml")
    parser.add_argument("--arena", default="tts-en")
    parser.add_argument("--prompts", type=int, default=6, help="prompts per model")
    parser.add_argument(
        "--deliveries", type=int, default=2, help="blind deliveries per clip (>= 1)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    load_start = os.getloadavg()[0]
    arena = next(a for a in load_registry(args.registry).arenas if a.id == args.arena)
    prompts = spread(list(arena.prompts), args.prompts)
    judge = IntelligibilityJudge(JudgeSpec("bench", "bench", "intelligibility", (arena.id,)))
    prosody = ProsodyJudge(JudgeSpec("bench", "bench", "prosody", (arena.id,)))
    head = (f"{'model':<30} {'WER own':>8} {'other':>6} {'spread':>7} {'max':>5} {'right':>6} "
            f"{'wrong':>6} {'bad':>5} {'range st':>9} {'ASR s/clip':>10} {'pitch s/clip':>12} "
            f"{'clip s':>7}")  # fmt: skip
    print(head)
    last = None
    for model in arena.models:
        backend = make_backend(model, arena.modality)
        if backend.remote or not backend.availability().ok:
            continue
        try:
            r = measure_model(backend, prompts, judge, args.deliveries)
        except BackendError as exc:
            print(f"{model.id:<30} failed: {exc}")
            continue
        last = backend.generate(prompts[0].text, TIMEOUT)
        print(f"{model.id[:30]:<30} {r['wer_own']:>8.3f} {r['wer_other']:>6.3f} "
              f"{r['wer_spread']:>7.3f} {r['wer_spread_max']:>5.2f} {r['right']:>6.2f} "
              f"{r['wrong']:>6.2f} {r['both_bad']:>5.2f} {r['range']:>9.2f} {r['asr_s']:>10.2f} {r['pitch_s']:>12.3f} "
              f"{r['audio_s']:>7.2f}", flush=True)  # fmt: skip
    print(f"\nmedians over {len(prompts)} prompts of {arena.id}, {args.deliveries} deliveries each")
    if last is not None:
        style_table(judge, prosody, last)
    print(f"\n{os.cpu_count()} cores, load average {load_start:.1f} -> {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
