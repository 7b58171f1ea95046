#!/usr/bin/python3
"""A stand-in for ``dcgmi diag`` on test clusters whose nodes have no GPU: it answers from the
node's mock GPU state instead of running DCGM's tests, and prints the result as ``dcgmi diag
--json`` does (a ``DCGM Diagnostic`` document with ``test_categories``, each test with one result
per GPU and a ``test_summary``), so readers built for DCGM read it unchanged. The document says
plainly that no GPU and no DCGM were involved.

The GPUs are those of the node: the ones handed to this container (``NVIDIA_VISIBLE_DEVICES``, set
by the node's device plugin) and the ones the mock GPU state lists as unhealthy (the state file the
device plugin mounts at ``/run/nvcre/gpu/state.json``; a device plugin never hands out an
unhealthy GPU, but DCGM diagnoses every GPU of its host). Each GPU's index is the last field of
its ID. An unhealthy GPU fails the hardware and stress tests of the level run; the exit status is
then 1, else 0. ``--host`` is accepted and not contacted (there is no hostengine).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

USAGE = "usage: dcgmi diag -r <level> [--host HOST] [--json] [--verbose] [-p PARAMETERS]... [-i GPUS]"
STATE_FILE = Path("/run/nvcre/gpu/state.json")
STATE_ENV = "NVCRE_GPU_STATE"  # another state file, for tests
MAX_STATE_BYTES = 1 << 20
#: (category, test) pairs per level, as DCGM groups them; a level runs its own and every lower one
LEVELS = {
    1: (("Deployment", "software"),),
    2: (("Integration", "pcie"),),
    3: (("Hardware", "memory"), ("Hardware", "diagnostic"), ("Stress", "targeted_stress"), ("Stress", "targeted_power")),
    4: (("Stress", "memory_bandwidth"), ("Hardware", "memtest")),
}
#: the categories whose tests an unhealthy GPU fails
FAILING = ("Hardware", "Stress")
_VALUED = {"-r", "--run", "--host", "-p", "--parameters", "-i", "--gpuList"}
_FLAGS = {"-j", "--json", "-v", "--verbose"}


class UsageError(Exception):
    """Arguments this stand-in cannot honour."""


def parse_args(argv: list[str]) -> tuple[int, bool, list[int] | None]:
    """``(level, json, GPU indices of -i or None)`` from ``diag ...`` arguments."""
    if not argv or argv[0] != "diag":
        raise UsageError("only the diag subcommand is available")
    level, as_json, wanted = 0, False, None
    index = 1
    while index < len(argv):
        arg = argv[index]
        flag, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if flag in _FLAGS:
            as_json = as_json or flag in ("-j", "--json")
            index += 1
            continue
        if flag not in _VALUED:
            raise UsageError(f"unknown option {arg!r}")
        if not inline:
            index += 1
            if index >= len(argv):
                raise UsageError(f"{arg} needs a value")
            inline = argv[index]
        if flag in ("-r", "--run"):
            if inline not in ("1", "2", "3", "4"):
                raise UsageError(f"{flag} must be a level from 1 to 4, not {inline!r}")
            level = int(inline)
        elif flag in ("-i", "--gpuList"):
            try:
                wanted = [int(part) for part in inline.split(",")]
            except ValueError:
                raise UsageError(f"{flag} wants GPU indices such as 0,1, not {inline!r}") from None
        index += 1
    if not level:
        raise UsageError("-r <level> is required")
    if not as_json:
        raise UsageError("the stand-in prints the --json form only")
    return level, as_json, wanted


def gpu_index(device_id: str) -> int:
    """A mock GPU's index: the last field of its ID (``GPU-...-000000000003`` is GPU 3)."""
    tail = device_id.rsplit("-", 1)[-1]
    if not tail.isdigit():
        raise UsageError(f"cannot tell the index of GPU {device_id!r}")
    return int(tail)


def node_gpus(environ: dict[str, str]) -> tuple[dict[int, str], set[int]]:
    """``({index: ID} of the node's GPUs, indices of the unhealthy ones)`` from the environment and the state file."""
    visible = [part.strip() for part in environ.get("NVIDIA_VISIBLE_DEVICES", "").split(",") if part.strip()]
    path = Path(environ.get(STATE_ENV) or STATE_FILE)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_STATE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the mock GPU state {path}: {exc.strerror}") from None
    if len(raw) > MAX_STATE_BYTES:
        raise UsageError(f"the mock GPU state {path} is larger than {MAX_STATE_BYTES} bytes")
    try:
        unhealthy_ids = json.loads(raw).get("unhealthy") or []
    except (ValueError, AttributeError):
        raise UsageError(f"the mock GPU state {path} is not a JSON object") from None
    if not isinstance(unhealthy_ids, list) or not all(isinstance(i, str) for i in unhealthy_ids):
        raise UsageError(f"the mock GPU state {path}: unhealthy must be a list of GPU IDs")
    gpus = {gpu_index(i): i for i in [*visible, *unhealthy_ids]}
    if not gpus:
        raise UsageError("no GPU: NVIDIA_VISIBLE_DEVICES is empty and the mock GPU state lists none")
    return gpus, {gpu_index(i) for i in unhealthy_ids}


def report(level: int, gpus: dict[int, str], unhealthy: set[int], wanted: list[int] | None) -> dict[str, object]:
    """The ``dcgmi diag --json`` document for ``level`` over ``gpus``."""
    indices = sorted(i for i in gpus if wanted is None or i in wanted)
    categories: dict[str, list[dict[str, object]]] = {}
    for lvl in range(1, level + 1):
        for category, test in LEVELS[lvl]:
            results = []
            for index in indices:
                bad = index in unhealthy and category in FAILING
                result: dict[str, object] = {"gpu_id": str(index), "status": "Fail" if bad else "Pass"}
                if bad:
                    result["warnings"] = [{"warning": f"GPU {index} ({gpus[index]}) is unhealthy in the node's mock GPU state"}]
                results.append(result)
            summary = "Fail" if any(r["status"] == "Fail" for r in results) else "Pass"
            categories.setdefault(category, []).append({"name": test, "results": results, "test_summary": {"status": summary}})
    return {
        "DCGM Diagnostic": {
            "runtime_environment": "dcgmi CPU stand-in (nvcre): results from the node's mock GPU state; no GPU and no DCGM were used",
            "test_categories": [{"category": name, "tests": tests} for name, tests in categories.items()],
        },
        "gpu_device_ids": [gpus[i] for i in indices],
    }


def main(argv: list[str]) -> int:
    try:
        level, _, wanted = parse_args(argv[1:])
        gpus, unhealthy = node_gpus(dict(os.environ))
    except UsageError as exc:
        print(f"dcgmi: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    document = report(level, gpus, unhealthy, wanted)
    sys.stdout.write(json.dumps(document, indent=2) + "\n")
    return 1 if '"status": "Fail"' in json.dumps(document) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
