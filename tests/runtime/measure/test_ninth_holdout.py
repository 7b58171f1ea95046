"""The reader fixes that the ninth real-output hold-out led to, and the limits they keep.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading
of every artefact; these tests pin the three behaviours the fixes added. The inputs are corpus
files under ``golden/measure/real/``:

- ``training/``: a torchtitan Qwen3 14B run log whose step lines carry terminal colour codes
  (``ESC[31mstep:  1  ESC[32mloss: 12.37525  ESC[38;2;180;60;0mgrad_norm: ...``), from
  https://github.com/pytorch/torchtitan/blob/9e7de2cddd95334c16814c144122621fb15e8071/outputs/autoresearch/may19-qwen3-14b/run355-mxfp8-optimizer-in-backward-loss-only-compile-loss-chunks8-sdpa-prefetch-seq128-lbs144-bf16-nccl-zero-cta-dataloader-worker2-prefetch2-metrics-logfreq1-no-flight-recorder/run.log.
  A colour code sat between ``step: N`` and ``loss:``, so no step was read. Every reader (training,
  nccl-tests, DCGM) now removes terminal control sequences from a line before any pattern runs;
- ``nodes/``: the Allocatable block of an EKS p5.48xlarge node whose only cloud evidence is
  ``vpc.amazonaws.com/efa: 32``
  (https://github.com/aws-samples/awsome-distributed-training/blob/7217859f67bc693c52ff175ccc6082c41dbd7a1b/3.test_cases/pytorch/mosaicml-composer/stable-diffusion/README.md).
  It read as on-prem; a platform rule may now name an extended resource only one cloud's device
  plugin advertises;
- ``nodes/``: GPU Feature Discovery's labels of a DGX A100 under the MIG ``single`` strategy
  (``nvidia.com/gpu.product: A100-SXM4-40GB-MIG-1g.5gb``, ``nvidia.com/gpu.count: "7"``), from
  https://github.com/NVIDIA/cloud-native-docs/blob/52dcb7b8d956784344e241df476de17094a4574c/kubernetes/index.rst.
  The seven MIG devices read as seven GPUs; such a node now has no count of whole GPUs and the
  capacity filter leaves it out.
"""

from __future__ import annotations

import json
from typing import Any

from nvcre.compiler.detect import detect_platform, filter_by_capacity, node_gpu_counts
from nvcre.compiler.detect.gpu_arch import node_products
from nvcre.compiler.detect.hints import count_hint
from nvcre.compiler.detect.platform import read_platform
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import ClusterFacts
from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.dcgm import parse_dcgm
from nvcre.runtime.measure.goodput_state import RunningGoodput, candidate_lines, fold
from nvcre.runtime.measure.nccl import parse_bandwidth
from nvcre.runtime.measure.nccl_checks import CORRUPTED, RUN_FAILED
from nvcre.runtime.measure.profile import split_line, strip_escapes
from nvcre.runtime.measure.training import parse_training
from tests.goldenharness import GOLDEN
from tests.runtime.measure.nccl_reading import HEADER, PARAMS, ROW, TRAILER, final_failure, nccl_profile

REAL = GOLDEN / "measure" / "real"
PROFILES = {p["metadata"]["name"]: p for p in builtin_logprofiles()}
TITAN = "torchtitan-training"
COLOURED_LOG = REAL / "training" / "torchtitan-2026-ansi-colour-steps-oom-retries-then-child-failed.txt"

ESC = "\x1b"
RED, GREEN, RESET, DEFAULT = f"{ESC}[31m", f"{ESC}[32m", f"{ESC}[0m", f"{ESC}[39m"
#: the 24-bit colour codes torchtitan prints before grad_norm and memory
ORANGE, TEAL = f"{ESC}[38;2;180;60;0m", f"{ESC}[38;2;54;234;195m"
#: a torchtitan step line as the terminal shows it, and the same line with torchtitan's colours
PLAIN_STEP = (
    "[rank0]:[titan] 2026-05-22 18:52:58,334 - root - INFO - step:  2  loss: 10.65329  grad_norm:  0.0000  "
    "memory: 173.96GiB(97.54%)  tps: 2,578  tflops: 217.23  mfu: N/A"
)
COLOURED_STEP = (
    f"[rank0]:[titan] 2026-05-22 18:52:58,334 - root - INFO - {RED}step:  2  {GREEN}loss: 10.65329  {ORANGE}grad_norm:  0.0000  "
    f"{TEAL}memory: 173.96GiB(97.54%)  {ESC}[34mtps: 2,578  {ESC}[36mtflops: 217.23  {ESC}[35mmfu: N/A{DEFAULT}"
)


def _progress(text: str, profile: str = TITAN) -> tuple[Any, ...]:
    parsed = parse_training(text, PROFILES[profile])
    return (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration, parsed.last_line_loss, parsed.tflops_lines)


# ------------------------------------------------------------------ terminal colour codes


def test_torchtitan_step_lines_printed_with_colour_codes_are_read() -> None:
    parsed = parse_training(COLOURED_LOG.read_text(encoding="utf-8"), PROFILES[TITAN])
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (4, 1, 4)
    assert parsed.last_line_loss == 15.66293 and parsed.tflops_lines == 4
    # the first line sets the clock; each later one is timed from its own timestamp
    assert [(s.iteration, round(s.elapsed_time, 3), s.tflops) for s in parsed.steps] == [
        (2, 7.15, 217.23),
        (3, 2.193, 708.1),
        (4, 1.998, 777.9),
    ]


def test_a_coloured_line_reads_as_the_line_a_terminal_shows() -> None:
    assert strip_escapes(COLOURED_STEP) == PLAIN_STEP
    assert split_line("2026-05-22T18:52:58.334Z " + COLOURED_STEP) == ("2026-05-22T18:52:58.334Z", PLAIN_STEP)
    assert _progress(COLOURED_STEP) == _progress(PLAIN_STEP) == (1, 2, 2, 10.65329, 1)


def test_colour_codes_around_the_numbers_themselves_are_removed() -> None:
    line = f"step: {ESC}[1m7{RESET}  loss: {ESC}[1;33m3.25{RESET}  tps: 100  tflops: {ESC}[38;5;208m99.5{RESET}"
    assert strip_escapes(line) == "step: 7  loss: 3.25  tps: 100  tflops: 99.5"
    assert _progress(line) == (1, 7, 7, 3.25, 1)


def test_only_escape_bytes_and_the_sequences_they_open_go() -> None:
    # CSI sequences of every shape: SGR with 24-bit colour, a private-mode parameter, an intermediate byte
    assert strip_escapes(f"a{ORANGE}b{ESC}[?25lc{ESC}[1 qd{ESC}[Ke") == "abcde"
    # brackets, semicolons and 'm' that no ESC opens are text and stay
    assert strip_escapes("[31m step: [1;2m") == "[31m step: [1;2m"
    # an ESC that opens no CSI goes alone, the text after it stays
    assert strip_escapes(f"x{ESC}(By{ESC}[3;\u00e9") == "x(By[3;\u00e9"
    # stripping leaves no ESC, so a second pass changes nothing
    twice = f"{ESC}{ESC}[0m[31mstep: 1"
    assert strip_escapes(strip_escapes(twice)) == strip_escapes(twice) == "[31mstep: 1"
    assert strip_escapes(PLAIN_STEP) is PLAIN_STEP


def test_an_escape_cut_by_the_end_of_a_line_breaks_nothing() -> None:
    for cut in (ESC, f"{ESC}[", f"{ESC}[3", f"{ESC}[38;2;180;60"):
        assert strip_escapes(COLOURED_STEP + cut) == PLAIN_STEP, repr(cut)
        # the rest of the sequence opens the next line: that line is text, and the step above it reads
        text = f"{COLOURED_STEP}{cut}\n9m{COLOURED_STEP.replace('step:  2', 'step:  3')}\n"
        assert _progress(text)[:3] == (2, 2, 3), repr(cut)
    # a table row ending in a cut sequence is still a row, its check cell still read
    row = ROW[: ROW.rindex("0")] + "4"
    failure = final_failure(f"{PARAMS}\n#\n{HEADER}\n{row}{ESC}[3\n{TRAILER}")
    assert failure is not None and failure["reason"] == CORRUPTED


def test_a_long_line_of_escapes_is_one_linear_pass() -> None:
    # whole sequences, then one cut by the line's end after 200,000 parameter bytes
    hostile = (f"{ESC}[" + "1;" * 50 + "m") * 4000 + f"{ESC}[" + "0" * 200_000
    assert strip_escapes(hostile) == ""
    assert _progress("step: 1  loss: 2.0 " + hostile) == (1, 1, 1, 2.0, 0)
    # sequences that never end: each ESC goes, what followed it is text
    unfinished = (f"{ESC}[" + "1;" * 50) * 4000 + "\u00e9"
    assert strip_escapes(unfinished) == ("[" + "1;" * 50) * 4000 + "\u00e9"


def test_colour_codes_in_an_nccl_table_neither_hide_a_failure_nor_make_one() -> None:
    def coloured(row: str) -> str:
        cells = row.split()
        return "  ".join(f"{GREEN}{cell}{RESET}" if i in (7, 11) else cell for i, cell in enumerate(cells))

    plain = f"{PARAMS}\n#\n{HEADER}\n{ROW}\n{TRAILER}"
    tinted = f"{PARAMS}\n#\n{HEADER}\n{coloured(ROW)}\n{TRAILER}"
    assert parse_bandwidth(tinted, nccl_profile()) == parse_bandwidth(plain, nccl_profile())
    assert final_failure(tinted) is None
    # a wrong-value cell printed in red is still a corruption
    cells = ROW.split()
    cells[8] = f"{RED}3{RESET}"
    failure = final_failure(f"{PARAMS}\n#\n{HEADER}\n{'  '.join(cells)}\n{TRAILER}")
    assert failure is not None and failure["reason"] == CORRUPTED
    # a coloured failure line still fails the run
    failure = final_failure(f"{PARAMS}\n#\n{RED}Test NCCL failure common.cu:1297 'unhandled cuda error'{RESET}\n")
    assert failure is not None and failure["reason"] == RUN_FAILED


def test_colour_codes_in_a_dcgm_table_keep_its_verdict() -> None:
    table = (REAL / "dcgm" / "dcgm-4.4.2-r2-single-gpu-pass.txt").read_text(encoding="utf-8")
    assert parse_dcgm(table).overall == "Pass"
    green = table.replace("| Pass ", f"| {GREEN}Pass{RESET} ").replace("GPU0: Pass", f"GPU0: {GREEN}Pass{RESET}")
    assert ESC in green and parse_dcgm(green) == parse_dcgm(table)
    failing = green.replace(f"| memory                    | {GREEN}Pass{RESET}", f"| memory                    | {RED}Fail{RESET}", 1)
    assert failing != green and parse_dcgm(failing).overall == "Fail"


def test_a_sampled_read_sees_a_literal_behind_a_colour_code() -> None:
    # a NeMo Automodel step line with its loss field coloured: the profile's literal ' loss' is
    # split by the colour code in the raw line, and only in the raw line
    lines = [
        f"2026-08-10 15:55:{20 + 3 * i} | INFO | root | step {9 + i} | epoch 3 | {GREEN}loss {0.6974 + i}{RESET} | tps 11278.56(1409.82/gpu)"
        for i in range(3)
    ]
    text = "\n".join(lines) + "\n"
    spec = PROFILES["nemo-automodel-training"]
    assert candidate_lines(text, (" loss",)) == lines
    whole = parse_training(text, spec)
    assert whole.iteration_lines == 3 and len(whole.steps) == 2
    state = fold(RunningGoodput(), text, spec)
    assert state.to_dict() == fold(RunningGoodput(), strip_escapes(text), spec).to_dict()
    assert state.to_dict()["iteration_lines"] == 3


# ------------------------------------------------------------------ a node placed by its EFA resource


def _describe_block(text: str) -> dict[str, str]:
    """The ``key: value`` lines of a describe piece's one block (its heading line left out)."""
    pairs = (line.strip().partition(":")[::2] for line in text.splitlines()[1:] if line.strip())
    return {key.strip(): value.strip() for key, value in pairs}


def test_a_node_advertising_efa_devices_is_on_aws() -> None:
    text = (REAL / "nodes" / "eks-p5-allocatable-block-efa-32-no-labels.txt").read_text(encoding="utf-8")
    node = {"kind": "Node", "metadata": {"name": "p5"}, "status": {"allocatable": _describe_block(text)}}
    reading = read_platform(node)
    assert (reading.platform, reading.basis, reading.from_labels) == ("aws", "resource vpc.amazonaws.com/efa", True)
    fact, diags = detect_platform([node])
    assert fact is not None and (fact.value, fact.detail) == ("aws", "resource vpc.amazonaws.com/efa of 1 target node")
    assert [(d.code, d.severity) for d in diags] == [("PlatformFromLabel", Severity.INFO)]
    assert node_gpu_counts(ClusterFacts(nodes=(node,)), [node])["p5"].count == 8


# ------------------------------------------------------------------ MIG devices are not GPUs


def _mig_labels() -> dict[str, str]:
    text = (REAL / "nodes" / "gpu-docs-dgx-a100-mig-single-1g5gb-label-map-count-7.yaml").read_text(encoding="utf-8")
    labels: dict[str, str] = json.loads(text)
    return labels


def test_mig_devices_under_the_single_strategy_are_no_count_of_gpus() -> None:
    labels = _mig_labels()
    assert labels["nvidia.com/gpu.count"] == "7"
    from_labels = {"kind": "Node", "metadata": {"name": "dgx-labels", "labels": labels}}
    # the device plugin advertises the seven MIG devices as nvidia.com/gpu as well
    advertised = {
        **from_labels,
        "metadata": {"name": "dgx-advertised", "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": "7"}},
    }
    facts = ClusterFacts(nodes=(from_labels, advertised))
    counts = node_gpu_counts(facts, facts.nodes)
    assert {name: (c.count, c.source) for name, c in counts.items()} == {"dgx-advertised": (None, "mig"), "dgx-labels": (None, "mig")}
    assert count_hint(labels) is None
    assert {name: p.arch for name, p in node_products(facts, facts.nodes).items()} == {"dgx-advertised": "a100", "dgx-labels": "a100"}


def test_the_capacity_filter_leaves_a_mig_node_out_and_says_why() -> None:
    labels = _mig_labels()
    mig = {"kind": "Node", "metadata": {"name": "dgx-mig", "labels": labels}, "status": {"allocatable": {"nvidia.com/gpu": "7"}}}
    whole = {"kind": "Node", "metadata": {"name": "dgx-whole", "labels": {}}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
    facts = ClusterFacts(nodes=(mig, whole))
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=1, category="communication/nccl-all-reduce")
    assert [n["metadata"]["name"] for n in kept] == ["dgx-whole"]
    assert [(e.name, e.reason) for e in excluded] == [
        ("dgx-mig", "its nvidia.com/gpu are MIG devices (A100-SXM4-40GB-MIG-1g.5gb), not whole GPUs")
    ]
    [diag] = diags
    assert (diag.code, diag.severity) == ("MIGDevicesNotGPUs", Severity.WARNING)
    assert "dgx-mig" in diag.message and "not whole GPUs" in diag.message and "needs whole GPUs" in diag.message
