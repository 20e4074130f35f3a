"""What the benchmarks share about the processes they run: the time a fresh process takes,
its peak memory, and its printed board in a form two runs can be compared in.

One definition each, so that a change in what the CLI prints (a new field that differs from
run to run) or in how memory is measured is made once for every benchmark.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import time
from pathlib import Path

#: Fields of ``leaderboard --format json`` that differ between two runs over the same votes
#: and code: the code version names each tree's commit (bench/ab_cli.py compares two trees),
#: and the revision's ``read_at`` is the reader's clock, a new instant every run.
RUN_FIELDS = ("code_version",)
REVISION_RUN_FIELDS = ("read_at",)


def comparable(output: str, fmt: str = "json") -> str:
    """The printed board ``output`` without what differs from run to run, so that equal
    strings mean equal boards, revisions and settings.

    JSON is parsed (a whole document, or the comparison means nothing), stripped of
    :data:`RUN_FIELDS` and the revision's :data:`REVISION_RUN_FIELDS`, and printed again
    as the CLI prints it. CSV and the text table carry neither the code version nor the
    revision (only the rows and a summary line), so they are compared as printed.
    """
    if fmt != "json":
        return output
    document = json.loads(output)
    for name in RUN_FIELDS:
        document.pop(name, None)
    revision = document.get("revision")
    if isinstance(revision, dict):  # older trees print no revision
        for name in REVISION_RUN_FIELDS:
            revision.pop(name, None)
    return json.dumps(document, indent=1, allow_nan=False)


def timed_run(args: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, the child's) of a fresh process running ``args``
    in ``cwd``, and its stdout; a failure raises with the process's stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"{args} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux).

    Read from ``VmHWM`` in ``/proc/self/status``, not ``ru_maxrss``: Linux carries a
    process's ``ru_maxrss`` over exec, so a child started from a large parent reports the
    parent's high-water mark whenever its own is lower.
    """
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024
