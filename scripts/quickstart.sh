#!/usr/bin/env bash
# Install into ./.venv (created if missing) and run the main job: random, no-transfer and
# CODuel on the embedded default world (the simulator's dev roster), seeds 0-3, then the leaderboard.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e .
tutorduel replay --world dev --seeds 0-3 --policies random,no-transfer,coduel "$@"
