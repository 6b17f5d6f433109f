#!/usr/bin/env bash
# The default test set once under each OpenBLAS kernel that every x86-64 CPU runs (Prescott, Nehalem,
# Sandybridge, Haswell): what a machine other than ours computes. Installs like scripts/test.sh first.
# Extra arguments go to pytest (e.g. -m slow, or a test path). About four times the default run.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[test]"
status=0
for kernel in Prescott Nehalem Sandybridge Haswell; do
    echo "== OPENBLAS_CORETYPE=$kernel"
    OPENBLAS_CORETYPE=$kernel python -m pytest -q -p no:cacheprovider "$@" | tail -n 4 || status=1
done
exit $status
