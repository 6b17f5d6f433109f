#!/usr/bin/env bash
# The default test set once under each OpenBLAS kernel that every x86-64 CPU runs (Prescott, Nehalem,
# Sandybridge, Haswell): what a machine other than ours computes. Each pass is scripts/test.sh (install, then
# pytest); extra arguments go to pytest (e.g. -m slow, or a test path). About four times the default run.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for kernel in Prescott Nehalem Sandybridge Haswell; do
    echo "== OPENBLAS_CORETYPE=$kernel"
    OPENBLAS_CORETYPE=$kernel bash scripts/test.sh -p no:cacheprovider "$@" | tail -n 4 || status=1
done
exit $status
