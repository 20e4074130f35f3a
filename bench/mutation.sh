#!/usr/bin/env bash
# Mutation testing of the rating, vote, battle, voter and Hub modules (issue 13).
#
#   bash bench/mutation.sh              # mutate, test, print the kill rate per module
#   bash bench/mutation.sh --fresh      # forget earlier results first (after editing tests)
#
# Too slow for CI (about an hour on two shared cores): run it before closing any issue
# that touches arena_core/ratings/, arena_core/votes/, arena_core/space/battles.py,
# arena_core/integrity/{identity,limiter}.py or arena_core/dataset/{hub,uploader}.py,
# and keep every module at 90% or more (README, "Mutation testing").
#
# What is mutated and which tests run is [tool.mutmut] in pyproject.toml. mutmut copies
# the package and the tests into mutants/ (git-ignored) and keeps its results there, so a
# second run re-tests only the functions that changed since; --fresh starts over, which
# a change of tests alone needs (mutmut does not notice that a killed mutant's tests
# changed). Results: `mutmut results`, one diff: `mutmut show <name>`.
# Needs the packages of bench/requirements-mutation.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
[ -x .venv/bin/python ] && PY=${PYTHON:-.venv/bin/python}
MUTMUT="$(dirname "$PY")/mutmut"
[ -x "$MUTMUT" ] || MUTMUT=mutmut

if [ "${1:-}" = "--fresh" ]; then
  rm -rf mutants
fi

# As the test suite runs: offline, no telemetry (scripts/test.sh).
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1
# Two workers at low priority: the machine is shared.
start=$(date +%s)
nice -n 10 "$MUTMUT" run --max-children "${MUTATION_WORKERS:-2}" || status=$?
echo "mutmut run took $(( $(date +%s) - start )) s (exit ${status:-0})"
"$PY" bench/mutation_report.py --survivors
