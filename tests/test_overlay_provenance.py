"""Every platform overlay says which NVCRE file, at which commit, it follows.

An overlay's ``reason`` ends with its provenance: one or more NVCRE files, each followed by the
short commit it was read at, written ``<path> @<commit>`` (``.../_lib/nccl/gb200-env.yaml
@f700f177``). A reason without one cannot be checked against NVCRE, so a new overlay that lacks
it fails here. Where an overlay deliberately renders something NVCRE does not, its reason says
so next to the citation.
"""

from __future__ import annotations

import re

import pytest

from nvcre.compiler.overlays import Overlay, load_overlays

#: ``<file> @<commit>``: a catalog file of NVCRE (YAML fragment, entry or topology XML) and the
#: eight-digit short commit it was read at.
CITATION = re.compile(r"(?P<path>[\w./-]+\.(?:yaml|xml)) @(?P<commit>[0-9a-f]{8})(?![0-9a-zA-Z])")
#: ``@`` followed by something that is not a short commit: a malformed citation.
LOOSE_AT = re.compile(r"@(?![0-9a-f]{8}(?![0-9a-zA-Z]))\S*")


def citations(reason: str) -> list[tuple[str, str]]:
    return [(m["path"], m["commit"]) for m in CITATION.finditer(reason)]


def provenance_problems(overlay: Overlay) -> list[str]:
    """What is wrong with an overlay's provenance; empty when its reason cites NVCRE properly."""
    problems = []
    if "NVCRE" not in overlay.reason:
        problems.append("the reason does not name NVCRE")
    if not citations(overlay.reason):
        problems.append("the reason cites no '<file> @<commit>'")
    bad = LOOSE_AT.findall(overlay.reason)
    if bad:
        problems.append(f"malformed commit after @: {', '.join(bad)}")
    return problems


OVERLAYS = load_overlays().overlays


def test_every_overlay_is_loaded() -> None:
    # the platform folders hold dozens of overlays; an empty list would make the test below vacuous
    assert len(OVERLAYS) > 60


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[o.name for o in OVERLAYS])
def test_overlay_reason_cites_the_nvcre_file_and_commit(overlay: Overlay) -> None:
    assert provenance_problems(overlay) == [], f"{overlay.source}: {provenance_problems(overlay)}"


def _overlay(reason: str) -> Overlay:
    return Overlay.model_validate(
        {"name": "example", "reason": reason, "when": {"gpuArchitecture": {"in": ["h100"]}}, "patches": "x.yaml.j2"}
    )


@pytest.mark.parametrize(
    "reason, expected",
    [
        ("NCCL needs eth0 for bootstrap", ["the reason does not name NVCRE", "the reason cites no '<file> @<commit>'"]),
        ("NCCL needs eth0 (NVCRE nccl-all-reduce.yaml)", ["the reason cites no '<file> @<commit>'"]),
        (
            "NCCL needs eth0 (NVCRE nccl-all-reduce.yaml @fc5a70)",
            ["the reason cites no '<file> @<commit>'", "malformed commit after @: @fc5a70)"],
        ),
        ("NCCL needs eth0 (NVCRE pkg/catalog/entries/_lib/nccl/gb200-env.yaml @f700f177)", []),
    ],
)
def test_provenance_check_rejects_reasons_without_a_citation(reason: str, expected: list[str]) -> None:
    assert provenance_problems(_overlay(reason)) == expected


def test_citations_read_every_file_and_commit() -> None:
    reason = (
        "x (NVCRE pkg/catalog/entries/_lib/deps/nscale-gpu-rdma.yaml @47b6d9ea; "
        "Nscale arms of nccl-all-reduce.yaml and nemotron5-8b.yaml @fc5a7082)"
    )
    assert citations(reason) == [
        ("pkg/catalog/entries/_lib/deps/nscale-gpu-rdma.yaml", "47b6d9ea"),
        ("nemotron5-8b.yaml", "fc5a7082"),
    ]
