"""Real-time factor of every local speech engine of the registry on this machine.

    nice -n 10 python bench/rtf.py                       # the table
    nice -n 10 python bench/rtf.py --write docs/rtf.json  # and the file the About tab reads

For each audio model that runs here without a network (hosted models are
skipped), the engine is first warmed up on one prompt (its load time is
reported apart), then asked for ``--prompts`` prompts of its arena, spread
over the prompt set (every k-th, so short and long sentences both count),
``--repeats`` times each. RTF = wall seconds / seconds of audio; CPU RTF =
CPU seconds of this process and its children (flite and Festival run as
programs) / seconds of audio. Medians over all runs. Generation goes straight
to the backend: no cache, no pool, one call at a time.

On a shared machine the wall figure grows with the load; the CPU figure much
less so. The load average at the start and end is printed and saved.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena_core.backends import BackendError, make_backend
from arena_core.registry import load_registry

log = logging.getLogger("bench.rtf")

#: Seconds one generation may take before it counts as failed.
TIMEOUT = 120.0


def cpu_seconds() -> float:
    """User + system CPU of this process (all threads) and of its children: those that
    finished, and those still running (Pico's worker process lives as long as we do)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + live_children_cpu()


def live_children_cpu() -> float:
    """CPU seconds so far of this process's running children (Linux ``/proc``; 0 elsewhere)."""
    total, me = 0, str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if fields[1] == me:  # ppid
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def spread(prompts: list, count: int) -> list:
    """``count`` prompts taken evenly across the set (all of them if it is smaller)."""
    if count >= len(prompts):
        return list(prompts)
    step = len(prompts) / count
    return [prompts[int(k * step)] for k in range(count)]


def language_of(backend, prompt) -> str | None:
    """The prompt's category when it is one of the languages the model declares (as the pool does)."""
    languages = backend.languages or ()
    return prompt.category if prompt.category in languages else None


def measure(backend, prompts, repeats: int) -> dict:
    """Load time, then (wall, cpu, audio seconds) of each run; medians of the ratios."""
    began = time.perf_counter()
    backend.generate(prompts[0].text, TIMEOUT, language_of(backend, prompts[0]))
    load = time.perf_counter() - began
    walls, cpus, audio = [], [], 0.0
    for prompt in prompts:
        for _ in range(repeats):
            wall0, cpu0 = time.perf_counter(), cpu_seconds()
            output = backend.generate(prompt.text, TIMEOUT, language_of(backend, prompt))
            wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
            walls.append(wall / output.duration)
            cpus.append(cpu / output.duration)
            audio += output.duration
    return {"first_call_s": load, "rtf": statistics.median(walls),
            "cpu_rtf": statistics.median(cpus), "runs": len(walls), "audio_s": audio}  # fmt: skip


def machine() -> dict:
    cpus = os.cpu_count()
    return {"cpus": cpus, "platform": platform.platform(), "python": platform.python_version(),
            "load_avg_start": os.getloadavg()[0]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--registry", default="registry.yaml")
    parser.add_argument("--prompts", type=int, default=5, help="prompts per model")
    parser.add_argument("--repeats", type=int, default=1, help="runs per prompt")
    parser.add_argument("--arena", action="append", help="only these arenas (repeatable)")
    parser.add_argument("--write", type=Path, help="save the results as JSON (docs/rtf.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    info = machine()
    registry = load_registry(args.registry)
    rows = []
    print(f"{'arena':<17} {'model':<34} {'first call s':>12} {'RTF':>6} {'CPU RTF':>8} "
          f"{'runs':>5} {'audio s':>8}")  # fmt: skip
    for arena in registry.arenas:
        if arena.modality != "audio" or (args.arena and arena.id not in args.arena):
            continue
        prompts = spread(list(arena.prompts), args.prompts)
        for model in arena.models:
            backend = make_backend(model, arena.modality)
            if backend.remote or not backend.availability().ok:
                continue
            try:
                result = measure(backend, prompts, args.repeats)
            except BackendError as exc:
                print(f"{arena.id:<17} {model.id:<34} failed: {exc}")
                continue
            rows.append({"arena": arena.id, "model": model.id, **result})
            print(f"{arena.id:<17} {model.id:<34} {result['first_call_s']:>12.2f} "
                  f"{result['rtf']:>6.3f} {result['cpu_rtf']:>8.3f} {result['runs']:>5} "
                  f"{result['audio_s']:>8.1f}", flush=True)  # fmt: skip
    info["load_avg_end"] = os.getloadavg()[0]
    info["summary"] = (f"{info['cpus']} cores, load average {info['load_avg_start']:.1f} "
                       f"→ {info['load_avg_end']:.1f} while measuring")  # fmt: skip
    print(f"\n{info['summary']}; medians over {args.prompts} prompts x {args.repeats} runs")
    if args.write:
        doc = {"measured": datetime.now(UTC).isoformat(timespec="seconds"), "machine": info,
               "command": "python bench/rtf.py " + " ".join(argv or sys.argv[1:]), "rows": rows}  # fmt: skip
        args.write.write_text(
            json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
