"""Benchmark: merging the Hub's votes into the live boards after a late download.

    python bench/hub_merge.py --votes 10000 100000 1000000

When the Hub answers only after start-up, ``ArenaService.reload`` replays every
vote file again under the vote log's lock, so votes cast meanwhile wait. This
prints, per log size, how long the reload takes (median of ``--repeat``) and how
long a vote cast during it waited, next to a vote's cost when nothing runs.
The votes are synthetic (bench/synth.py), as Parquet in the Hub mirror folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import simulate, write_parquet

from arena_core.registry import parse_registry
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog


def service(folder: Path, n_models: int) -> ArenaService:
    prompts = folder / "prompts.yaml"
    prompts.write_text(
        "- {id: p0, text: Even., category: even}\n- {id: p1, text: Odd., category: odd}\n"
    )
    models = [{"id": f"model-{k:02d}", "name": f"Model {k}", "backend": {"type": "espeak", "voice": "en-us"}}
              for k in range(n_models)]  # fmt: skip
    registry = parse_registry({"arenas": [{"id": "synthetic", "title": "Synthetic", "modality": "audio",
                                           "prompts": "prompts.yaml", "models": models}]},
                              base_dir=folder)  # fmt: skip
    log = VoteLog(folder / "votes", lock=threading.RLock())  # as HubSync.lock
    return ArenaService(registry, {}, log, replay_sources=[folder / "hub"])


def cast(svc: ArenaService) -> float:
    start = time.perf_counter()
    svc.vote_log.append(arena="synthetic", model_a="model-00", model_b="model-01", vote="a",
                        then=svc.replay.apply)  # fmt: skip
    return time.perf_counter() - start


def measure(n_votes: int, n_models: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        frames, _ = simulate(n_votes, n_models)
        write_parquet(frames, folder / "hub")
        svc = service(folder, n_models)
        svc.load()
        idle = statistics.median(cast(svc) for _ in range(20))
        reloads, waits = [], []
        for _ in range(repeat):
            thread = threading.Thread(target=svc.reload)
            start = time.perf_counter()
            thread.start()
            time.sleep(0.01)  # let the reload take the lock
            waits.append(cast(svc))
            thread.join()
            reloads.append(time.perf_counter() - start)
        svc.close()
    return {"votes": n_votes, "reload_s": statistics.median(reloads),
            "vote_wait_s": max(waits), "vote_idle_ms": 1000 * idle}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'votes':>10} {'reload (s)':>11} {'vote waited (s)':>16} {'vote alone (ms)':>16}")
    for n in args.votes:
        r = measure(n, args.models, args.repeat)
        print(
            f"{r['votes']:>10,} {r['reload_s']:>11.2f} {r['vote_wait_s']:>16.2f} {r['vote_idle_ms']:>16.2f}"
        )


if __name__ == "__main__":
    main()
