#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine, then run them all.
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: Chromium for the browser tests (with a Japanese font, so the
# screenshots of the Japanese arena show text, not boxes), and the optional speech
# engines the Space installs (packages.txt), so their code paths are tested too.
debs=(chromium fonts-ipafont-gothic)
# Java for the Spark counts job's tests (Spark's local mode), where no Java is installed yet:
# Debian's default JRE (17 on bookworm).
command -v java >/dev/null 2>&1 || debs+=(default-jre-headless)
if [ -f packages.txt ]; then
  while read -r p; do [[ -z "$p" || "$p" == \#* ]] || debs+=("$p"); done < packages.txt
fi
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python packages, in a virtual environment of the repository's own.
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-test.txt

# The browser and Spark tests must run here, not skip; the Hub and analytics stay out of reach.
export ARENA_REQUIRE_BROWSER=1 ARENA_REQUIRE_JAVA=1 GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# The registry the Space ships: a prior without a source or a mapping that does not round-trip
# fails the run (models without a prior are only listed).
.venv/bin/python -m arena_core registry --check --registry registry.yaml > /dev/null
# One test file per worker (module-scoped fixtures such as the launched app stay whole).
# Three workers on two cores: the browser and app tests spend much of their time waiting for
# clips to play, and a third worker fills it (on this machine 108 s against 121 s with two,
# measured back to back).
.venv/bin/python -m pytest -n 3 --dist loadfile "$@"
