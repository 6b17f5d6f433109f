#!/usr/bin/env bash
# Install into ./.venv (created if missing) and run the default test set (slow tests excluded).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[test]"
python -m pytest -q "$@"
