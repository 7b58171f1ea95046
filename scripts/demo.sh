#!/usr/bin/env bash
# The main job on a machine without GPUs: start a GPU cluster with the nvcre controller, run a
# certification and print its report, then a failing one, and stop everything (also on Ctrl-C or
# an error).
#
# Which cluster: real nodes (real kubelets and containers in a network namespace of their own, the
# workloads' CPU stand-ins running for real) where this machine allows them (root, a cgroup
# hierarchy, the system tools), else the simulated cluster (kwok nodes, the logs played). The
# script says which it chose and why. NVCRE_DEMO=real or NVCRE_DEMO=sim chooses by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCRECTL=${NVCRECTL:-.venv/bin/nvcrectl}
PYTHON=${PYTHON:-$(dirname "$NVCRECTL")/python}
mode=${NVCRE_DEMO:-auto}

case "$mode" in
  auto)
    # what stops real nodes here; what is only not built yet, `dev up --real` builds
    blockers=$("$PYTHON" -c 'from nvcre.testing.realnodes import toolchain; print("; ".join(toolchain.machine_problems()))')
    if [ -z "$blockers" ]; then
      mode=real
      echo "# real nodes: this machine has root, a cgroup hierarchy and the tools they need (NVCRE_DEMO=sim for the simulated cluster)"
    else
      mode=sim
      echo "# the simulated cluster: real nodes cannot run here: $blockers"
    fi
    ;;
  real | sim) echo "# NVCRE_DEMO=$mode" ;;
  *) echo "NVCRE_DEMO must be real, sim or unset, got '$mode'" >&2; exit 2 ;;
esac

"$NVCRECTL" certification list-categories
echo

if [ "$mode" = real ]; then
  "$NVCRECTL" dev up --real --profile h100 --nodes 2 --with-controller --detach
  trap '"$NVCRECTL" dev down' EXIT
  eval "$("$NVCRECTL" dev env)"

  echo "== a healthy run: the nccl-tests stand-in's real MPI all-reduce over TCP between the two nodes' pods"
  "$NVCRECTL" certification run --cert-file examples/certification-real-nodes.yaml --grant-run-access --wait --timeout 10m

  echo "== the same with every rank killed as it starts on h100-onprem-1 (expected: FAILED, WorkloadFailed)"
  "$NVCRECTL" dev fault h100-onprem-1=killed-rank
  if "$NVCRECTL" certification run --cert-file examples/certification-real-nodes.yaml --grant-run-access --wait --timeout 10m; then
    echo "expected the group holding h100-onprem-1 to fail" >&2
    exit 1
  fi
  echo "== demo complete (real nodes)"
  exit 0
fi

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
echo "== demo complete (simulated cluster)"
