"""Benchmark: the arena's own CPU per visit, without HTTP or Gradio.

    python bench/visit_cpu.py [--visits 1000] [--data DIR]

Builds the Space's service as ``app.py`` does for ``bench/load.py``'s arena (English
speech, the output cache warmed first into ``--data``), then times, in this process,
what a visit asks of the arena: open a battle (pairing, the two shaped clips, blind
delivery), encode both clips as the page gets them, and vote (log with fsync, live board,
anomaly test). CPU time of the whole process (background threads included), median of
five rounds; set against ``bench/load.py``'s server CPU per visit, the rest is the web
stack's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import load  # noqa: E402

from arena_core.page import media  # noqa: E402
from arena_core.space.clips import ClipStore  # noqa: E402
from arena_core.space.config import Settings  # noqa: E402
from arena_core.space.startup import build_service  # noqa: E402

ROUNDS = 5


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visits", type=int, default=1000, help="visits per round")
    parser.add_argument("--data", help="data folder to reuse (keeps the output cache warm)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arena-visit-") as tmp:
        data = Path(args.data) if args.data else Path(tmp)
        load.warm_cache(data)
        for old in (data / "votes").glob("votes-*"):
            old.unlink()
        settings = Settings(registry=load.arena_registry(data), data_dir=data, voter_salt="cpu",
                            listen_share=0.0, rate_limit=10**9)  # fmt: skip
        service = build_service(settings)
        service.load()
        clips = ClipStore(Path(tmp) / "clips", 256 * 2**20)
        try:
            rounds = [one_round(service, clips, args.visits, tmp) for _ in range(ROUNDS + 1)][1:]
        finally:
            service.close()
    print("| measure | value |\n|---|---:|")
    print(f"| arena CPU per visit, median of {ROUNDS} rounds of {args.visits} (ms) | "
          f"{statistics.median(rounds):.2f} |")  # fmt: skip
    print(f"| rounds (ms) | {', '.join(f'{r:.2f}' for r in rounds)} |")
    return 0


def one_round(service, clips: ClipStore, visits: int, cache: str) -> float:
    """CPU milliseconds per visit over ``visits`` visits (50 voters in turn)."""
    started = time.process_time()
    for k in range(visits):
        view = service.new_battle(load.ARENA)
        media.values(view, clips, cache)
        service.vote(view.handle, load.CHOICES[k % 4], f"voter-{k % 50}")
    return 1000 * (time.process_time() - started) / visits


if __name__ == "__main__":
    sys.exit(main())
