"""What the nccl reader's hold-out tests share: the corpus folder of real nccl-tests outputs, a
table header, row, parameters line and trailer for hand-made runs, the built-in
``nccl-bandwidth`` LogProfile, the failure a final read of a text records, and the check of a
corpus run that failed before any row."""

from __future__ import annotations

from typing import Any

from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.nccl import parse_bandwidth, status_fields
from nvcre.runtime.measure.nccl_checks import RUN_FAILED
from tests.goldenharness import GOLDEN

NCCL = GOLDEN / "measure" / "real" / "nccl"
#: a table header and one 8-byte row as nccl-tests prints them, for the tests' hand-made runs
HEADER = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
ROW = "           8             2     float     sum      -1    20.15    0.00    0.00      0    19.87    0.00    0.00      0"
#: the parameters line that opens such a run, and the trailer that closes it
PARAMS = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
TRAILER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.00123\n"


def nccl_profile() -> dict[str, Any]:
    """The catalog's built-in ``nccl-bandwidth`` LogProfile."""
    profile: dict[str, Any] = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nccl-bandwidth")
    return profile


def final_failure(text: str) -> dict[str, str] | None:
    """``status.failure`` of a final read of ``text`` (None when the run reads as valid)."""
    failure: dict[str, str] | None = status_fields(parse_bandwidth(text, nccl_profile()), final=True).get("failure")
    return failure


def assert_failed_before_any_row(file: str, quoted: str) -> None:
    """The corpus file ``file`` holds no nccl-tests row and its final read fails the run as
    ``CollectiveRunFailed`` with a message that quotes ``quoted``."""
    text = (NCCL / file).read_text(encoding="utf-8")
    parsed = parse_bandwidth(text, nccl_profile())
    assert parsed.row_count == 0 and parsed.avg_bus_bandwidth is None
    failure = final_failure(text)
    assert failure is not None
    assert failure["reason"] == RUN_FAILED
    assert quoted in failure["message"]
