#!/usr/bin/env bash
# The main job on a machine without GPUs: start the simulated GPU cluster with the nvcre
# controller, run a certification and print its report, then a failing one, and stop everything
# (also on Ctrl-C or an error).
set -euo pipefail
cd "$(dirname "$0")/.."
NVCRECTL=${NVCRECTL:-.venv/bin/nvcrectl}

"$NVCRECTL" certification list-categories
echo
"$NVCRECTL" dev up --profile h100 --nodes 4 --with-controller --detach
trap '"$NVCRECTL" dev down' EXIT
eval "$("$NVCRECTL" dev env)"

echo "== a healthy run"
"$NVCRECTL" certification run --category communication/nccl-all-reduce --wait --timeout 10m

echo "== the same nodes with one slow link, pairs of nodes with a bandwidth floor (expected: FAILED)"
"$NVCRECTL" dev fault h100-onprem-3=slow-link
if "$NVCRECTL" certification run --cert-file examples/certification-pairs-threshold.yaml --wait --timeout 10m; then
  echo "expected the pair holding h100-onprem-3 to fail" >&2
  exit 1
fi
echo "== demo complete"
