#!/usr/bin/env bash
# Mutation testing of the rating, vote, battle, voter and Hub modules (issue 13).
#
#   bash bench/mutation.sh              # mutate, test, print the kill rate per module
#   bash bench/mutation.sh --recheck    # re-test every survivor (after adding tests)
#   bash bench/mutation.sh --fresh      # forget earlier results first
#
# Too slow for CI (one to one and a half hours from scratch on two shared cores: README,
# "Mutation testing"): run it before closing any issue that touches arena_core/ratings/,
# arena_core/votes/, arena_core/space/battles.py, arena_core/integrity/{identity,limiter}.py
# or arena_core/dataset/{hub,repo,uploader,cursor}.py, and keep every module at 90% or more.
#
# What is mutated and which tests run is [tool.mutmut] in pyproject.toml. mutmut copies
# the package and the tests into mutants/ (git-ignored) and keeps its results there, so a
# second run re-tests only the mutants not yet tested and those of functions that changed
# since. It does not re-test a survivor because a test was added: --recheck names every
# mutant not killed and not listed as equivalent, and mutmut re-tests exactly those (new
# tests are first mapped to the functions they reach). --fresh starts over; a change of
# the test selection in [tool.mutmut] makes mutmut re-test everything anyway.
# Results: `mutmut results`, one diff: `mutmut show <name>`.
# Needs the packages of bench/requirements-mutation.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
[ -x .venv/bin/python ] && PY=${PYTHON:-.venv/bin/python}
MUTMUT="$(dirname "$PY")/mutmut"
[ -x "$MUTMUT" ] || MUTMUT=mutmut

names=()
case "${1:-}" in
  --fresh) rm -rf mutants ;;
  --recheck) mapfile -t names < <("$PY" bench/mutation_report.py --names) ;;
esac

# As the test suite runs: offline, no telemetry (scripts/test.sh).
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1
# Two workers at low priority: the machine is shared.
start=$(date +%s)
nice -n 10 "$MUTMUT" run --max-children "${MUTATION_WORKERS:-2}" "${names[@]}" || status=$?
echo "mutmut run took $(( $(date +%s) - start )) s (exit ${status:-0})"
"$PY" bench/mutation_report.py --survivors
