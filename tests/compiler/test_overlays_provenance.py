"""Every platform overlay says which NVCRE file, at which commit, it follows.

An overlay's ``reason`` ends with its provenance: one or more NVCRE files, each followed by the
short commit it was read at, written ``<path> @<commit>`` (``.../_lib/nccl/gb200-env.yaml
@f700f177``). A reason without one cannot be checked against NVCRE, so a new overlay that lacks
it fails here. Where an overlay deliberately renders something NVCRE does not, its reason says
so next to the citation.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvcre.compiler.overlays import Overlay, load_overlays, parse_overlay

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
    return parse_overlay({"name": "example", "reason": reason, "when": {"gpuArchitecture": {"in": ["h100"]}}, "patches": "x.yaml.j2"})


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


# --- kept-different rows of docs/fidelity.md ------------------------------------------------------

FIDELITY = Path(__file__).resolve().parents[2] / "docs" / "fidelity.md"
_KEPT_HEADER = "| where | this project | NVCRE | why | check | overlay |"


def kept_different_rows() -> list[tuple[str, list[str]]]:
    """(where, overlay names) of every row of the "Differences from NVCRE" table; ``catalog`` rows
    name no overlay."""
    lines = FIDELITY.read_text(encoding="utf-8").splitlines()
    start = lines.index(_KEPT_HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        names = re.findall(r"`([^`]+)`", cells[-1])
        assert names or cells[-1] == "catalog", f"docs/fidelity.md row {cells[0]!r}: the overlay cell is {cells[-1]!r}"
        rows.append((cells[0], names))
    return rows


def prose(reason: str) -> str:
    """The reason without its trailing citation: the part that says what the overlay does and why."""
    cut = reason.rfind("(NVCRE")
    return reason[:cut] if cut >= 0 else reason


def kept_difference_problems(where: str, names: list[str], by_name: dict[str, Overlay]) -> list[str]:
    problems = []
    for name in names:
        overlay = by_name.get(name)
        if overlay is None:
            problems.append(f"{where}: no overlay named {name}")
        elif "NVCRE" not in prose(overlay.reason):
            problems.append(f"{where}: {name}'s reason does not say, before its citation, what NVCRE does instead")
    return problems


def test_the_fidelity_table_has_kept_different_rows() -> None:
    rows = kept_different_rows()
    assert len(rows) > 20
    assert any(names for _, names in rows)


def test_every_kept_different_row_has_an_overlay_reason() -> None:
    by_name = {o.name: o for o in OVERLAYS}
    problems = [p for where, names in kept_different_rows() for p in kept_difference_problems(where, names, by_name)]
    assert problems == []


def test_kept_difference_check_rejects_a_reason_without_the_nvcre_side() -> None:
    plain = _overlay("workers tolerate the GPU taint (NVCRE pkg/catalog/entries/_lib/deps/x.yaml @f700f177)")
    stated = _overlay("the image stays pinned where NVCRE names latest (NVCRE pkg/catalog/entries/_lib/deps/x.yaml @f700f177)")
    assert kept_difference_problems("row", ["example"], {"example": plain}) == [
        "row: example's reason does not say, before its citation, what NVCRE does instead"
    ]
    assert kept_difference_problems("row", ["example"], {"example": stated}) == []
    assert kept_difference_problems("row", ["missing"], {}) == ["row: no overlay named missing"]
