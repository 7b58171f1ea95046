"""docs/platforms.md is generated from the overlay data and must match it."""

from __future__ import annotations

from pathlib import Path

from nvcre.compiler.platform_table import render_platform_table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "platforms.md"


def test_platform_page_matches_the_overlays() -> None:
    assert PAGE.read_text(encoding="utf-8") == render_platform_table(), (
        "docs/platforms.md is stale: run .venv/bin/python scripts/gen_platform_table.py"
    )


def test_every_overlay_appears_on_some_row() -> None:
    from nvcre.compiler.overlays import load_overlays

    text = render_platform_table()
    for overlay in load_overlays().overlays:
        assert f"`{overlay.name}`" in text, overlay.name
