"""Golden cases for the log parsers: golden/measure/<case>/ input.log + profile -> expected.json.

Upstream samples also carry NVCRE's own expectation (``nvcre-expected.json``); the parse must
equal it exactly, not just our reviewed golden.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.profile import parse_rfc3339
from nvcre.runtime.measure.training import calculate_goodput, parse_training
from tests.goldenharness import GOLDEN, cases, check

# real/ is the corpus of real tool outputs (its own manifest and test), not a case folder.
CASES = [case for case in cases("measure") if (case / "case.yaml").is_file()]


def _profile(case: Path, ref: str) -> dict[str, Any]:
    if ref.startswith("builtin:"):
        wanted = ref.split(":", 1)[1]
        return next(p for p in builtin_logprofiles() if p["metadata"]["name"] == wanted)
    return yaml.safe_load((case / ref).read_text(encoding="utf-8"))


def _project(case: Path) -> dict[str, Any]:
    spec = yaml.safe_load((case / "case.yaml").read_text(encoding="utf-8"))
    text = (case / "input.log").read_text(encoding="utf-8")
    if spec["parser"] == "nccl":
        parsed = parse_bandwidth(text, _profile(case, spec["profile"]))
        return {
            "results": [row.to_status() for row in parsed.results],
            "avgBusBandwidth": parsed.avg_bus_bandwidth,
            "transport": list(parsed.transport),
            "rowCount": parsed.row_count,
            "failure": parsed.failure.to_status() if parsed.failure is not None else None,
        }
    if spec["parser"] == "training":
        training = parse_training(text, _profile(case, spec["profile"]))
        now = parse_rfc3339(spec["now"])
        assert isinstance(now, datetime)
        return {"parse": training.to_dict(), "goodput": calculate_goodput(training, now).status_fields()}
    assert spec["parser"] == "dcgm"
    return parse_dcgm(text).to_dict()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_measure_golden(case: Path, update_golden: bool) -> None:
    actual = json.dumps(_project(case), indent=2, sort_keys=True) + "\n"
    check(case / "expected.json", actual, update_golden, json.loads)


def test_allreduce_sample_matches_nvcre_results_exactly() -> None:
    case = GOLDEN / "measure" / "nccl-allreduce-a100-2node-launcher"
    upstream = json.loads((case / "nvcre-expected.json").read_text(encoding="utf-8"))
    expected = upstream["BandwidthMeasurement/test-bw-real"]["status"]["results"]
    assert _project(case)["results"] == expected
    assert len(expected) == 23


def test_goodput_sample_matches_nvcre_parse_exactly() -> None:
    case = GOLDEN / "measure" / "goodput-n6-full-sequence"
    upstream = json.loads((case / "nvcre-expected.json").read_text(encoding="utf-8"))
    assert _project(case)["parse"] == upstream


def test_loopback_sample_has_its_size_table() -> None:
    """28 sizes from 8 B to 1 GiB, two cycles each; the single rank moves no bus bandwidth."""
    case = GOLDEN / "measure" / "nccl-loopback-a100-pdt"
    projected = _project(case)
    results = projected["results"]
    assert projected["rowCount"] == 56
    assert len(results) == 28 and all(r["samples"] == 2 for r in results)
    assert results[0]["sizeBytes"] == 8 and results[-1]["sizeBytes"] == 1073741824
    # 688.75 and 688.95 in the two cycles
    assert results[-1]["algBW"] == "688.85" and results[-1]["busBW"] == "0.00"
    assert projected["avgBusBandwidth"] == 0.0
    assert projected["transport"] == ["Socket"]
