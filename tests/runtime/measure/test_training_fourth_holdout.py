"""The readers' fixes that the fourth real-output hold-out led to, each on its own.

The corpus test (``tests/runtime/measure/test_profile_real_corpus.py``) checks the whole reading of every artefact;
these tests pin the single behaviour each fix added and the limits it keeps, so that a later
change cannot lose one without a named failure. The inputs are corpus files under
``golden/measure/real/`` (their public sources are in the manifest): a node piece that kept
only its Capacity block (https://github.com/groundlight/edge-endpoint/pull/79) and NeMo
Automodel key=value step lines (https://github.com/NVIDIA-NeMo/Automodel/pull/3173).
"""

from __future__ import annotations

from typing import Any

from nvcre.compiler.detect import filter_by_capacity, node_gpu_counts
from nvcre.compiler.facts import ClusterFacts
from nvcre.compiler.logprofiles import builtin_logprofiles
from nvcre.runtime.measure.training import parse_training
from tests.goldenharness import GOLDEN

REAL = GOLDEN / "measure" / "real"


def _automodel() -> dict[str, Any]:
    profile: dict[str, Any] = next(p for p in builtin_logprofiles() if p["metadata"]["name"] == "nemo-automodel-training")
    return profile


def _node(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": {}}, "status": status}


# ------------------------------------------------------------------ GPU count from capacity


def test_a_node_piece_with_only_capacity_counts_its_capacity_gpus() -> None:
    piece = _node("g4", {"capacity": {"cpu": "4", "nvidia.com/gpu": "1", "pods": "110"}})
    facts = ClusterFacts(nodes=(piece,))
    count = node_gpu_counts(facts, facts.nodes)["g4"]
    assert (count.count, count.source) == (1, "capacity")


def test_capacity_is_never_read_when_an_allocatable_block_is_present() -> None:
    # kubelet lowers allocatable below capacity for unhealthy devices: capacity must not win
    unhealthy = _node("sick", {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "0"}})
    no_gpu_key = _node("cpu", {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"cpu": "4"}})
    empty_block = _node("empty", {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": None})
    facts = ClusterFacts(nodes=(unhealthy, no_gpu_key, empty_block))
    counts = node_gpu_counts(facts, facts.nodes)
    assert [(counts[n].count, counts[n].source) for n in ("sick", "cpu", "empty")] == [(None, "")] * 3


def test_capacity_that_is_not_a_whole_positive_number_gives_no_count() -> None:
    pieces = [
        _node("zero", {"capacity": {"nvidia.com/gpu": "0"}}),
        _node("half", {"capacity": {"nvidia.com/gpu": "500m"}}),
        _node("junk", {"capacity": {"nvidia.com/gpu": "lots"}}),
        _node("none", {"capacity": {"cpu": "4"}}),
    ]
    facts = ClusterFacts(nodes=tuple(pieces))
    counts = node_gpu_counts(facts, facts.nodes)
    assert {name: c.count for name, c in counts.items()} == {"half": None, "junk": None, "none": None, "zero": None}


def test_a_capacity_count_names_its_source_when_it_excludes_a_node() -> None:
    facts = ClusterFacts(nodes=(_node("g4", {"capacity": {"nvidia.com/gpu": "1"}}),))
    kept, excluded, _ = filter_by_capacity(facts, facts.nodes, gpus_per_node=8, category="communication/nccl-all-reduce")
    assert kept == ()
    assert [(e.name, e.reason) for e in excluded] == [
        ("g4", "has 1 capacity nvidia.com/gpu (the node object has no allocatable block), the workload requests 8 per node")
    ]


# ------------------------------------------------------------------ NeMo Automodel key=value lines


def test_nemo_automodel_key_value_step_lines_are_read_and_timed() -> None:
    text = (REAL / "training/nemo-automodel-eagle-key-value-steps.txt").read_text(encoding="utf-8")
    parsed = parse_training(text, _automodel())
    assert (parsed.iteration_lines, parsed.first_line_iteration, parsed.last_line_iteration) == (5, 1070, 1110)
    assert parsed.last_line_loss == 2.5146
    # no step time is printed: each line after the first is timed from the timestamps, 20 s for
    # the 10 iterations between two lines
    assert [(s.iteration, s.elapsed_time, s.loss) for s in parsed.steps][:2] == [(1080, 2.0, 2.4976), (1090, 2.0, 2.5113)]
    assert all(s.tflops is None for s in parsed.steps)


def test_a_nan_loss_in_the_key_value_form_is_seen_as_divergence() -> None:
    lines = (
        "2026-07-26 19:37:11 | INFO | nemo_automodel.recipes.llm.train_eagle1 | epoch=0 step=10 loss=2.5 acc=0.3\n"
        "2026-07-26 19:37:31 | INFO | nemo_automodel.recipes.llm.train_eagle1 | epoch=0 step=20 loss=nan acc=0.0\n"
    )
    parsed = parse_training(lines, _automodel())
    assert parsed.iteration_lines == 2 and parsed.diverged_lines == 1
    assert parsed.last_line_loss is not None and parsed.last_line_loss != parsed.last_line_loss


def test_a_global_step_field_is_not_taken_for_a_step() -> None:
    line = "Epoch 0: 100%|#| 81/81 [00:40<00:00, 1.99it/s, global_step=4.000, loss=11.60]\n"
    bare = "2026-07-26 19:37:11 | INFO | x | global_step=4 loss=1.0\n"
    assert parse_training(line + bare, _automodel()).iteration_lines == 0


def test_the_pipe_form_still_reads_its_epoch() -> None:
    line = "2026-08-10 15:55:20 | INFO | root | step 9 | epoch 3 | loss 0.6974 | grad_norm 1.5 | tps 11278.56(1409.82/gpu)\n"
    later = "2026-08-10 15:55:23 | INFO | root | step 10 | epoch 3 | loss 0.8534 | grad_norm 1.5 | tps 13746.23(1718.28/gpu)\n"
    [step] = parse_training(line + later, _automodel()).steps
    assert (step.iteration, step.epoch, step.loss, step.tokens_per_sec) == (10, 3, 0.8534, 13746.23)
