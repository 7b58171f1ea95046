"""The recorded evidence cases (``tests/fixtures/evidence/cases.py``), loaded once for every test that uses them,
and small bundles written from a plain history (node -> the bus bandwidth of each iteration)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

CASES_FILE = Path(__file__).resolve().parent / "fixtures" / "evidence" / "cases.py"


def _load() -> ModuleType:
    loaded = sys.modules.get("evidence_cases")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("evidence_cases", CASES_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cases = _load()


#: the category of history bundles: one single-node group per node
HISTORY_CATEGORY = "communication/nccl-loopback"
REPORT_NAMES = ("report.json", "report.txt", "junit.xml", "report.html")


def history_identity(nodes: Sequence[str]) -> dict[str, Any]:
    """The cluster identity of ``nodes``: the same H100 machine for each, a serial per name."""
    return {
        "nodes": [
            {
                "name": n,
                "found": True,
                "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 8},
                "driverVersion": "580",
                "cudaVersion": "13.0",
                "systemUUID": f"uuid-{n}",
            }
            for n in nodes
        ]
    }


def history_predicate(name: str, history: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """A predicate with one Job per node and iteration, measuring the history's values."""
    jobs = [
        {"group": f"g-{node}", "iteration": i, "nodes": [node], "bandwidth": {"peakBusBandwidthGBps": v, "rows": [], "complete": True}}
        for node, values in history.items()
        for i, v in enumerate(values, 1)
    ]
    return {
        "run": {"kind": "Certification", "name": name, "namespace": "x", "result": "PASSED"},
        "categories": [{"category": HISTORY_CATEGORY, "status": "Succeeded", "groups": [], "jobs": jobs}],
    }


def write_history(root: Path, name: str, history: Mapping[str, Sequence[float]], signer: Any = None) -> Path:
    """The bundle ``root/name`` of a history (signed when a signer is given)."""
    from nvcre.runtime.evidence.bundle import compose_bundle, write_bundle

    reports = {k: b"x" for k in REPORT_NAMES}
    predicate = history_predicate(name, history)
    contents = compose_bundle(workflows=[], identity=history_identity(sorted(history)), reports=reports, predicate=predicate, signer=signer)
    write_bundle(contents, root / name)
    return root / name
