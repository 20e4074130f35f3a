"""What blind delivery does to each real engine: rate, loudness, peak, crest, silence and length,
as the engines make them and as the browser gets them, plus the shaping cost.

    python bench/blinding.py [--arena tts-en] [--prompts 10] [--format table|json]

Runs the installed engines of the arena on its first ``--prompts`` set prompts (outputs
cached in a temporary folder), shapes and delivers each clip in battles against a
fixed partner, and prints one row per model: medians over the prompts.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.backends import ModelPool, OutputCache
from arena_core.registry import load_registry
from arena_core.space.blinding import BlindingParams, deliver, loudness, shape

#: A sample counts as sound when it is above this (16-bit units): over the dither, under speech.
SOUND_THRESHOLD = 100


def measure(output) -> dict:
    x = output.samples.astype(np.float64) / 32767
    rate = output.sample_rate
    sound = np.flatnonzero(np.abs(output.samples) > SOUND_THRESHOLD)
    peak = 20 * np.log10(max(np.max(np.abs(x)), 1e-9))
    lufs = loudness(x, rate)
    return {"rate": rate, "lufs": lufs, "peak": peak, "crest": peak - lufs,
            "lead": sound[0] / rate if len(sound) else 0.0,
            "trail": (len(x) - sound[-1]) / rate if len(sound) else 0.0,
            "seconds": len(x) / rate}  # fmt: skip


def run(arena_id: str, prompts: int, params: BlindingParams) -> list[dict]:
    registry = load_registry(Path(__file__).resolve().parent.parent / "registry.yaml")
    arena = registry.arena(arena_id)
    with tempfile.TemporaryDirectory() as folder:
        pool = ModelPool.from_arena(arena, env={"PATH": os.environ.get("PATH", "")},
                                    cache=OutputCache(folder))  # fmt: skip
        models = [m for m, s in pool.status().items() if s.available]
        rng = np.random.default_rng(0)
        rows = []
        for model_id in models:
            before, after, costs = [], [], []
            for prompt in arena.prompts[:prompts]:
                if not pool.serves(model_id, prompt.category):
                    continue
                raw = pool.generate(model_id, prompt.text, prompt.category)
                began = time.perf_counter()
                shaped = shape(raw, params)
                costs.append(time.perf_counter() - began)
                partner = shape(pool.generate(models[0], prompt.text, prompt.category), params)
                delivered, _ = deliver([shaped, partner], params, rng)
                before.append(measure(raw))
                after.append(measure(delivered))
            rows.append(_row(model_id, before, after, costs))
        pool.close()
    return rows


def _row(model_id, before, after, costs) -> dict:
    def med(samples, key):
        return float(np.median([s[key] for s in samples]))

    row = {"model": model_id, "shape_ms": 1000 * float(np.median(costs))}
    for when, samples in (("before", before), ("after", after)):
        for key in ("rate", "lufs", "peak", "crest", "lead", "trail"):
            row[f"{key}_{when}"] = med(samples, key)
        row[f"crest_range_{when}"] = [float(min(s["crest"] for s in samples)),
                                      float(max(s["crest"] for s in samples))]  # fmt: skip
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arena", default="tts-en")
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    args = parser.parse_args()
    params = BlindingParams()
    rows = run(args.arena, args.prompts, params)
    if args.format == "json":
        print(json.dumps({"params": params.__dict__, "rows": rows}, indent=1))
        return
    print(f"target {params.loudness} LUFS, ceiling {params.ceiling} dBFS, {params.sample_rate} Hz; "
          f"medians over {args.prompts} prompts; before -> after")  # fmt: skip
    print(f"{'model':32} {'rate Hz':>13} {'loudness LUFS':>15} {'peak dBFS':>13} "
          f"{'crest dB (min-max)':>22} {'lead s':>11} {'trail s':>11} {'shape ms':>8}")  # fmt: skip
    for r in rows:
        crest = (f"{r['crest_range_before'][0]:.0f}-{r['crest_range_before'][1]:.0f} -> "
                 f"{r['crest_range_after'][0]:.0f}-{r['crest_range_after'][1]:.0f}")  # fmt: skip
        print(f"{r['model']:32} {r['rate_before']:>5.0f}->{r['rate_after']:<6.0f} "
              f"{r['lufs_before']:>6.1f}->{r['lufs_after']:<6.1f} {r['peak_before']:>5.1f}->{r['peak_after']:<6.1f} "
              f"{crest:>22} {r['lead_before']:>4.2f}->{r['lead_after']:<4.2f} "
              f"{r['trail_before']:>4.2f}->{r['trail_after']:<4.2f} {r['shape_ms']:>8.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
