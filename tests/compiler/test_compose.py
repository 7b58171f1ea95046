"""The Certification `certification run --category` submits, and the derived `--wait` budget."""

from __future__ import annotations

import pytest

from nvcre.compiler.api.validate import validate
from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.compose import (
    MIN_WAIT_SECONDS,
    RunFlags,
    compose_certification,
    derived_wait_seconds,
)
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.durations import format_duration, parse_duration

CATALOG = load_catalog()


def _messages(exc: CompileError) -> list[str]:
    return [d.message for d in exc.diagnostics]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h", 3600), ("90m", 5400), ("1h30m", 5400), ("45s", 45), ("250ms", 0.25), ("0", 0), ("1.5h", 5400)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "h", "1d", "1h x", "ten"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format_duration() -> None:
    assert format_duration(36 * 3600) == "36h0m0s"
    assert format_duration(5400) == "1h30m0s"
    assert format_duration(45) == "45s"
    assert format_duration(90) == "1m30s"


def test_composed_certification_is_valid_and_carries_flags() -> None:
    flags = RunFlags(
        categories=("communication/nccl-all-reduce,communication/nccl-loopback", "diagnostics/dcgm-level4"),
        nodes_per_job=2,
        enable_mnnvl=False,
        image_pull_secrets=("nvcrectl-pull-run",),
    )
    doc = compose_certification("nvcrectl-20261202-120000", "nvcrectl-20261202-120000", flags, CATALOG)
    assert doc["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "nvcre",
        "app.kubernetes.io/created-by": "nvcrectl",
    }
    spec = doc["spec"]
    assert spec["target"] == {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
    assert [f"{c['domain']}/{c['variant']}" for c in spec["categories"]] == [
        "communication/nccl-all-reduce",
        "communication/nccl-loopback",
        "diagnostics/dcgm-level4",
    ]
    assert spec["nodesPerJob"] == 2 and spec["enableMNNVL"] is False
    assert "gpusPerNode" not in spec and "enableCheckpoint" not in spec
    assert spec["imagePullSecrets"] == [{"name": "nvcrectl-pull-run"}]
    assert not [d for d in validate(doc) if d.severity.value == "error"]


def test_every_flag_problem_is_reported_at_once() -> None:
    flags = RunFlags(categories=("nope", "communication/unknown"), placement="Sideways", max_restarts=-1)
    with pytest.raises(CompileError) as caught:
        compose_certification("n", "ns", flags, CATALOG)
    messages = _messages(caught.value)
    assert 'invalid category format "nope": expected domain/variant' in messages
    assert any(m.startswith('unknown category "communication/unknown"\n\nAvailable categories:\n') for m in messages)
    assert '--placement must be Pinned or Unpinned, got "Sideways"' in messages
    assert "--max-restarts must not be negative (got -1)" in messages
    paths = [d.path for d in caught.value.diagnostics]
    assert "--category[0]" in paths and "--category[1]" in paths


def test_unpinned_needs_a_size_and_no_category_is_an_error() -> None:
    with pytest.raises(CompileError) as caught:
        compose_certification("n", "ns", RunFlags(placement="Unpinned"), CATALOG)
    messages = _messages(caught.value)
    assert any(m.startswith("--placement Unpinned requires --nodes-per-job") for m in messages)
    assert any(m.startswith("either --cert-file or at least one --category is required") for m in messages)


def test_derived_wait_training_alone_is_36h() -> None:
    doc = compose_certification("n", "ns", RunFlags(categories=("training/nemotron5-8b",)), CATALOG)
    assert derived_wait_seconds(doc, CATALOG) == (36 * 3600, True)


def test_derived_wait_takes_the_longest_category_and_iterations() -> None:
    doc = compose_certification("n", "ns", RunFlags(categories=("communication/nccl-all-reduce",), repeat_count=3), CATALOG)
    assert derived_wait_seconds(doc, CATALOG) == (3 * 3600 * 1.5, True)


def test_derived_wait_never_below_30_minutes() -> None:
    doc = compose_certification("n", "ns", RunFlags(categories=("communication/nccl-all-reduce",)), CATALOG)
    doc["spec"]["categories"][0]["options"] = {"timeoutPerJob": "5m"}
    assert derived_wait_seconds(doc, CATALOG) == (MIN_WAIT_SECONDS, False)


def test_derived_wait_diagnose_defaults() -> None:
    doc = compose_certification("n", "ns", RunFlags(categories=("communication/nccl-all-reduce",)), CATALOG)
    doc["spec"]["testScale"] = "diagnose"
    # 15m per job x 5 iterations x 1.5
    assert derived_wait_seconds(doc, CATALOG) == (15 * 60 * 5 * 1.5, True)
