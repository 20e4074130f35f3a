"""Kill rate per module from mutmut's results (``mutants/**/*.py.meta``), as a Markdown table.

    python bench/mutation_report.py                # the table (run after bench/mutation.sh)
    python bench/mutation_report.py --survivors    # and every mutant not killed, by module
    python bench/mutation_report.py --names        # just the names of those not judged equivalent

A mutant counts as killed when a test failed, or when it hung until mutmut's CPU limit
(a timeout: the test run did not pass). It survived when every test covering it passed,
or when no selected test reached its function at all ("no tests": a gap too). Survivors
judged equivalent (no test can tell them from the original code) are listed, each with
the reason, in ``bench/mutation_equivalent.tsv``; the kill rate leaves them out of the
denominator: killed / (mutants - equivalent). The raw rate is killed / mutants.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Exit codes of a mutant's test run (mutmut's ``status_by_exit_code``) that mean "killed".
KILLED = {1: "killed", 3: "killed", 36: "timeout", -24: "timeout", 24: "timeout",
          152: "timeout", 255: "timeout", 37: "type check"}  # fmt: skip
#: Exit codes that mean the tests did not notice the mutant.
SURVIVED = {0: "survived", 5: "no tests", 33: "no tests"}
#: Equivalent mutants: ``mutant name<TAB>reason`` per line, ``#`` comments.
EQUIVALENT = ROOT / "bench" / "mutation_equivalent.tsv"
#: Kill rate each module must reach (issue 13).
TARGET = 0.90


def mutated_files(root: Path) -> list[Path]:
    """The source files ``[tool.mutmut] only_mutate`` selects, in a stable order."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]
    files = []
    for source in config["source_paths"]:
        for path in sorted((root / source).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, p) for p in config["only_mutate"]):
                files.append(Path(rel))
    return files


def load_equivalent(path: Path = EQUIVALENT) -> dict[str, str]:
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, reason = line.partition("\t")
            out[name.strip()] = reason.strip()
    return out


def outcome(code) -> str:
    if code in KILLED:
        return "killed"
    if code in SURVIVED:
        return SURVIVED[code]
    return "not checked" if code is None else f"other ({code})"


def collect(root: Path) -> dict[str, dict[str, str]]:
    """Outcome of every mutant, per source file (files without mutants are left out)."""
    results = {}
    for rel in mutated_files(root):
        meta = root / "mutants" / f"{rel}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if codes:
            results[rel.as_posix()] = {name: outcome(code) for name, code in codes.items()}
    return results


def table(results: dict[str, dict[str, str]], equivalent: dict[str, str]) -> tuple[str, bool]:
    """The Markdown table, and whether every module reached :data:`TARGET`."""
    lines = ["| module | mutants | killed | survived | of which equivalent | kill rate |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    totals, ok = Counter(), True
    for module, outcomes in results.items():
        n = len(outcomes)
        killed = sum(o == "killed" for o in outcomes.values())
        equiv = sum(o != "killed" and name in equivalent for name, o in outcomes.items())
        rate = killed / (n - equiv) if n > equiv else 1.0
        ok &= rate >= TARGET
        totals.update(mutants=n, killed=killed, equivalent=equiv)
        name = module.removeprefix("arena_core/").removesuffix(".py")
        lines.append(f"| {name} | {n} | {killed} | {n - killed} | {equiv} | {rate:.1%} |")
    n, killed, equiv = totals["mutants"], totals["killed"], totals["equivalent"]
    rate = killed / (n - equiv) if n > equiv else 1.0
    lines.append(f"| **all** | {n} | {killed} | {n - killed} | {equiv} | {rate:.1%} |")
    return "\n".join(lines), ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survivors", action="store_true", help="list every mutant not killed")
    parser.add_argument("--names", action="store_true",
                        help="print only the names of the mutants not killed and not judged "
                             "equivalent, one a line (for bench/mutation.sh --recheck)")  # fmt: skip
    args = parser.parse_args(argv)
    results = collect(ROOT)
    if not results:
        print("no results under mutants/: run bench/mutation.sh first", file=sys.stderr)
        return 2
    equivalent = load_equivalent()
    if args.names:
        for outcomes in results.values():
            for name, status in outcomes.items():
                if status != "killed" and name not in equivalent:
                    print(name)
        return 0
    text, ok = table(results, equivalent)
    print(text)
    pending = sum(o == "not checked" for outcomes in results.values() for o in outcomes.values())
    if pending:
        print(f"\n{pending} mutants not checked yet: the run was interrupted")
    stale = set(equivalent) - {n for o in results.values() for n, v in o.items() if v != "killed"}
    if stale:
        print(f"\nlisted as equivalent but killed or gone (update {EQUIVALENT.name}): "
              + ", ".join(sorted(stale)))  # fmt: skip
    if args.survivors:
        for module, outcomes in results.items():
            alive = [(n, o) for n, o in outcomes.items() if o != "killed" and n not in equivalent]
            if alive:
                print(f"\n{module}:")
                for name, status in alive:
                    print(f"    {name}  ({status})")
    print(f"\nevery module at {TARGET:.0%} or more: {'yes' if ok else 'NO'}")
    return 0 if ok and not pending else 1


if __name__ == "__main__":
    sys.exit(main())
